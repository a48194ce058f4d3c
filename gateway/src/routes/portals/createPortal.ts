import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Str } from "../../schema.ts";
import { BrandingInput, PortalName, PortalSlug, SessionTtl } from "./shapes.ts";

export const createPortal = route({
  audited: true,
  description:
    "Latchkey's addition: a portal in front of one API, where the API's end users see, create and reroll their own keys (docs/portal.md). `slug` (unique in the workspace) may name it in `portal.createSession`; `sessionTtlMs` (1 minute to 24 hours, default 24 hours) is how long its sessions last.",
  answer: Closed({ portalId: Type.String({ examples: ["portal_2cGKbMxRjIzhCxo1IdjH3a"] }) }),
  example: { apiId: "api_123", name: "Acme customers", slug: "acme" },
  rootKey: {
    needs: ["portal.*.create_portal"],
    also: "`api.<apiId>.read_api` on the portal's API (without it the API is answered 404, as one that does not exist)",
  },
  errors: [404, 409, 412],
  schema: Closed({
    apiId: Str(3, 255, ID_PATTERN),
    name: PortalName(),
    slug: Type.Optional(PortalSlug()),
    branding: Type.Optional(BrandingInput()),
    sessionTtlMs: Type.Optional(SessionTtl()),
  }),
  permissions: () => ["portal.*.create_portal"],
  async handle(input, { caller, services }) {
    const res = await services.portal.createPortal({
      caller,
      apiId: input.apiId,
      name: input.name,
      slug: input.slug,
      branding: input.branding,
      sessionTtlMs: input.sessionTtlMs === undefined ? undefined : BigInt(input.sessionTtlMs),
    });
    return { data: { portalId: res.portalId } };
  },
});
