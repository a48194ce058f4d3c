import { route } from "../route.ts";
import { permissionRefSchema } from "./permissions.getPermission.ts";

export const deletePermission = route({
  schema: permissionRefSchema,
  async handle(input, { caller, services }) {
    await services.identity.deletePermission({ caller, permission: input.permission });
    return { data: {} };
  },
});
