import { Type } from "@sinclair/typebox";
import { KeyRole } from "../../answers.ts";
import { keyRoleData } from "../../json.ts";
import { route } from "../../route.ts";
import { keyRolesSchema } from "./addRoles.ts";

/** Replaces the key's roles at once ([] clears them); roles must exist. Answers them. */
export const setRoles = route({
  audited: true,
  description:
    "Needs `rbac.*.add_role_to_key` and `rbac.*.remove_role_from_key` for what it adds and removes, as keys.addRoles and keys.removeRoles do (Unkey does not ask them here).",
  answer: Type.Array(KeyRole),
  example: { keyId: "key_123", roles: ["admin"] },
  rootKey: {
    needs: ["api.<apiId>.update_key"],
    also: "`rbac.*.add_role_to_key` / `rbac.*.remove_role_from_key` for what it adds / removes",
  },
  errors: [404],
  schema: keyRolesSchema(0),
  async handle(input, { caller, services }) {
    const res = await services.keys.setRoles({ caller, keyId: input.keyId, roles: input.roles });
    return { data: res.roles.map(keyRoleData) };
  },
});
