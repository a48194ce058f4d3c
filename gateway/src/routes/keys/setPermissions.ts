import { Type } from "@sinclair/typebox";
import { Permission } from "../../answers.ts";
import { permissionData } from "../../json.ts";
import { route } from "../../route.ts";
import { keyPermissionsSchema } from "./addPermissions.ts";

/** Replaces the key's direct permissions at once ([] clears them). Answers them. */
export const setPermissions = route({
  audited: true,
  description:
    "Needs `rbac.*.add_permission_to_key` and `rbac.*.remove_permission_from_key` for what it adds and removes, as keys.addPermissions and keys.removePermissions do.",
  answer: Type.Array(Permission),
  example: { keyId: "key_123", permissions: ["documents.read"] },
  rootKey: {
    needs: ["api.<apiId>.update_key"],
    also: "`rbac.*.add_permission_to_key` / `rbac.*.remove_permission_from_key` for what it adds / removes; a permission that does not exist: also `rbac.*.create_permission`",
  },
  errors: [404],
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
