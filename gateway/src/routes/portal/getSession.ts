import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, Enum } from "../../schema.ts";
import { BrandingAnswer, brandingData } from "../portals/shapes.ts";
import { PORTAL_SCOPES } from "./createSession.ts";
import { NO_STORE, sessionAuth } from "./session.ts";

export const getSession = route({
  auth: "portalSession",
  description:
    "Latchkey's addition: the session the cookie names, for the portal's page: its portal's name and branding, the end user's externalId, the scopes granted, where to send the user back, and when it expires.",
  answer: Closed({
    sessionId: Type.String({ examples: ["ps_2cGKbMxRjIzhCxo1IdjH3a"] }),
    portal: Closed({
      portalId: Type.String({ examples: ["portal_2cGKbMxRjIzhCxo1IdjH3a"] }),
      name: Type.String({ examples: ["Acme customers"] }),
      branding: BrandingAnswer,
    }),
    externalId: Type.String({ examples: ["user_123"] }),
    scopes: Type.Array(Enum(PORTAL_SCOPES)),
    returnUrl: Type.Optional(Type.String({ examples: ["https://app.example.com/settings/api-keys"] })),
    expiresAt: Type.Integer({ minimum: 0, examples: [1_767_312_000_000] }),
    preview: Type.Boolean(),
  }),
  example: {},
  rootKey: { needs: [] },
  schema: Closed({}),
  async handle(_input, ctx) {
    const { session } = await ctx.services.portal.getSession({ auth: sessionAuth(ctx, false) });
    const s = session!;
    return {
      data: {
        sessionId: s.id,
        portal: { portalId: s.portal!.id, name: s.portal!.name, branding: brandingData(s.portal!.branding) },
        externalId: s.externalId,
        scopes: s.scopes,
        ...(s.returnUrl !== undefined ? { returnUrl: s.returnUrl } : {}),
        expiresAt: Number(s.expiresAt),
        preview: s.preview,
      },
      headers: NO_STORE,
    };
  },
});
