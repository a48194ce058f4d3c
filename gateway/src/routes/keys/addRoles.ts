import { Type } from "@sinclair/typebox";
import { KeyRole } from "../../answers.ts";
import { keyRoleData } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Str } from "../../schema.ts";

/** {keyId, roles: names}; add and remove take 1 to 100, set 0 to 100, each 1 to 128. */
export const keyRolesSchema = (minItems: 0 | 1) =>
  Closed({
    keyId: Str(3, 255, ID_PATTERN),
    roles: Type.Array(Str(1, 128), { minItems, maxItems: 100 }),
  });

/** Roles must exist (404 role_not_found naming the first that does not). Answers the key's roles. */
export const addRoles = route({
  audited: true,
  answer: Type.Array(KeyRole),
  example: { keyId: "key_123", roles: ["admin"] },
  rootKey: { needs: ["api.<apiId>.update_key", "rbac.*.add_role_to_key"] },
  errors: [404],
  schema: keyRolesSchema(1),
  async handle(input, { caller, services }) {
    const res = await services.keys.addRoles({ caller, keyId: input.keyId, roles: input.roles });
    return { data: res.roles.map(keyRoleData) };
  },
});
