import { route } from "../route.ts";
import { roleRefSchema } from "./permissions.getRole.ts";

export const deleteRole = route({
  schema: roleRefSchema,
  async handle(input, { caller, services }) {
    await services.identity.deleteRole({ caller, role: input.role });
    return { data: {} };
  },
});
