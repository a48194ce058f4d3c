import { Type } from "@sinclair/typebox";
import { Permission } from "../../answers.ts";
import { permissionData } from "../../json.ts";
import { route } from "../../route.ts";
import { keyPermissionsSchema } from "./addPermissions.ts";

/** A slug the key does not hold is ignored. Answers the key's direct permissions. */
export const removePermissions = route({
  audited: true,
  answer: Type.Array(Permission),
  example: { keyId: "key_123", permissions: ["documents.read"] },
  rootKey: { needs: ["api.<apiId>.update_key", "rbac.*.remove_permission_from_key"] },
  errors: [404],
  schema: keyPermissionsSchema(1),
  async handle(input, { caller, services }) {
    const res = await services.keys.removePermissions({
      caller,
      keyId: input.keyId,
      permissions: input.permissions,
    });
    return { data: res.permissions.map(permissionData) };
  },
});
