import { keyRoleData } from "../json.ts";
import { route } from "../route.ts";
import { keyRolesSchema } from "./keys.addRoles.ts";

/** Replaces the key's roles at once ([] clears them); roles must exist. Answers them. */
export const setRoles = route({
  schema: keyRolesSchema(0),
  async handle(input, { caller, services }) {
    const res = await services.keys.setRoles({ caller, keyId: input.keyId, roles: input.roles });
    return { data: res.roles.map(keyRoleData) };
  },
});
