import { Type } from "@sinclair/typebox";
import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed, Nullable } from "../../schema.ts";
import { BrandingInput, PortalId, PortalName, PortalSlug, SessionTtl } from "./shapes.ts";

export const updatePortal = route({
  audited: true,
  description:
    "Latchkey's addition: changes the fields given; `slug: null` removes the slug, `branding` replaces the branding as a whole. Live sessions keep the lifetime they were given.",
  answer: Empty,
  example: { portalId: "portal_123", name: "Acme customers" },
  rootKey: {
    needs: ["portal.<portalId>.update_portal"],
    masked: "A root key without it is answered 404, as for a portal that does not exist.",
  },
  errors: [404, 409],
  schema: Closed({
    portalId: PortalId(),
    name: Type.Optional(PortalName()),
    slug: Type.Optional(Nullable(PortalSlug())),
    branding: Type.Optional(BrandingInput()),
    sessionTtlMs: Type.Optional(SessionTtl()),
  }),
  async handle(input, { caller, services }) {
    await services.portal.updatePortal({
      caller,
      portalId: input.portalId,
      name: input.name,
      slug: input.slug === null ? "" : input.slug,
      branding: input.branding,
      sessionTtlMs: input.sessionTtlMs === undefined ? undefined : BigInt(input.sessionTtlMs),
    });
    return { data: {} };
  },
});
