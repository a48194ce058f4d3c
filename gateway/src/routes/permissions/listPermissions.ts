import { Type } from "@sinclair/typebox";
import { Permission } from "../../answers.ts";
import { pagination, permissionData } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, pageFields } from "../../schema.ts";

export const listPermissions = route({
  answer: Type.Array(Permission),
  paginated: true,
  example: {},
  rootKey: { needs: ["rbac.*.read_permission"] },
  schema: Closed(pageFields),
  async handle(input, { caller, services }) {
    const res = await services.identity.listPermissions({
      caller,
      page: { limit: input.limit ?? 100, cursor: input.cursor ?? "" },
      search: input.search ?? "",
    });
    return { data: res.permissions.map(permissionData), pagination: pagination(res.page) };
  },
});
