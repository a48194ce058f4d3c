import { Type } from "@sinclair/typebox";
import { KeyRole } from "../../answers.ts";
import { keyRoleData } from "../../json.ts";
import { route } from "../../route.ts";
import { keyRolesSchema } from "./addRoles.ts";

/** A role the key does not have is ignored; a name that is no role is 404 role_not_found. Answers the key's remaining roles. */
export const removeRoles = route({
  audited: true,
  answer: Type.Array(KeyRole),
  example: { keyId: "key_123", roles: ["admin"] },
  rootKey: { needs: ["api.<apiId>.update_key", "rbac.*.remove_role_from_key"] },
  errors: [404],
  schema: keyRolesSchema(1),
  async handle(input, { caller, services }) {
    const res = await services.keys.removeRoles({ caller, keyId: input.keyId, roles: input.roles });
    return { data: res.roles.map(keyRoleData) };
  },
});
