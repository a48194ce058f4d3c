import { Type } from "@sinclair/typebox";
import { Role } from "../../answers.ts";
import { pagination, roleData } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, pageFields } from "../../schema.ts";

export const listRoles = route({
  answer: Type.Array(Role),
  paginated: true,
  example: {},
  rootKey: { needs: ["rbac.*.read_role"] },
  schema: Closed(pageFields),
  async handle(input, { caller, services }) {
    const res = await services.identity.listRoles({
      caller,
      page: { limit: input.limit ?? 100, cursor: input.cursor ?? "" },
      search: input.search ?? "",
    });
    return { data: res.roles.map(roleData), pagination: pagination(res.page) };
  },
});
