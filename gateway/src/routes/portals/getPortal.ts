import { route } from "../../route.ts";
import { Closed } from "../../schema.ts";
import { PortalAnswer, PortalId, portalData } from "./shapes.ts";

export const getPortal = route({
  description: "Latchkey's addition: one portal (docs/portal.md).",
  answer: PortalAnswer,
  example: { portalId: "portal_123" },
  rootKey: {
    needs: ["portal.<portalId>.read_portal"],
    masked: "A root key without it is answered 404, as for a portal that does not exist.",
  },
  errors: [404],
  schema: Closed({ portalId: PortalId() }),
  async handle(input, { caller, services }) {
    const res = await services.portal.getPortal({ caller, portalId: input.portalId });
    return { data: portalData(res.portal!) };
  },
});
