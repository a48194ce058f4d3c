import { permissionData } from "../json.ts";
import { route } from "../route.ts";
import { keyPermissionsSchema } from "./keys.addPermissions.ts";

/** Replaces the key's direct permissions at once ([] clears them). Answers them. */
export const setPermissions = route({
  schema: keyPermissionsSchema(0),
  async handle(input, { caller, services }) {
    const res = await services.keys.setPermissions({
      caller,
      keyId: input.keyId,
      permissions: input.permissions,
    });
    return { data: res.permissions.map(permissionData) };
  },
});
