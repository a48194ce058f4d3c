import { Type } from "@sinclair/typebox";
import { pagination } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, pageFields } from "../../schema.ts";
import { PortalAnswer, portalData } from "./shapes.ts";

export const listPortals = route({
  description: "Latchkey's addition: the workspace's portals by id.",
  answer: Type.Array(PortalAnswer),
  paginated: true,
  example: {},
  rootKey: { needs: ["portal.*.read_portal"] },
  schema: Closed({ limit: pageFields.limit, cursor: pageFields.cursor }),
  async handle(input, { caller, services }) {
    const res = await services.portal.listPortals({
      caller,
      page: { limit: input.limit ?? 100, cursor: input.cursor ?? "" },
    });
    return { data: res.portals.map(portalData), pagination: pagination(res.page) };
  },
});
