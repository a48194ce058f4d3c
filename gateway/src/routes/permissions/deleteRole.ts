import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { roleRefSchema } from "./getRole.ts";

export const deleteRole = route({
  audited: true,
  answer: Empty,
  example: { role: "admin" },
  rootKey: { needs: ["rbac.*.delete_role"] },
  errors: [404],
  schema: roleRefSchema,
  async handle(input, { caller, services }) {
    await services.identity.deleteRole({ caller, role: input.role });
    return { data: {} };
  },
});
