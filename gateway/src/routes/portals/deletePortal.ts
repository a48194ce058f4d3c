import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed } from "../../schema.ts";
import { PortalId } from "./shapes.ts";

export const deletePortal = route({
  audited: true,
  description:
    "Latchkey's addition: the portal and its sessions go; every session's token stops working at once. The API and its keys stay.",
  answer: Empty,
  example: { portalId: "portal_123" },
  rootKey: {
    needs: ["portal.<portalId>.delete_portal"],
    masked: "A root key without it is answered 404, as for a portal that does not exist.",
  },
  errors: [404],
  schema: Closed({ portalId: PortalId() }),
  async handle(input, { caller, services }) {
    await services.portal.deletePortal({ caller, portalId: input.portalId });
    return { data: {} };
  },
});
