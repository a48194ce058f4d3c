import { Type } from "@sinclair/typebox";
import { Permission } from "../../answers.ts";
import { permissionData } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, SLUG_PATTERN, Str } from "../../schema.ts";

/** {keyId, permissions: slugs}; add and remove take 1 to 1000, set 0 to 1000, each 1 to 128. */
export const keyPermissionsSchema = (minItems: 0 | 1) =>
  Closed({
    keyId: Str(3, 255, ID_PATTERN),
    permissions: Type.Array(Str(1, 128, SLUG_PATTERN), { minItems, maxItems: 1000 }),
  });

/** Missing slugs are created only when the root key holds rbac.*.create_permission. Answers the key's direct permissions. */
export const addPermissions = route({
  audited: true,
  answer: Type.Array(Permission),
  example: { keyId: "key_123", permissions: ["documents.read"] },
  rootKey: {
    needs: ["api.<apiId>.update_key", "rbac.*.add_permission_to_key"],
    also: "a permission that does not exist: also `rbac.*.create_permission`",
  },
  errors: [404],
  schema: keyPermissionsSchema(1),
  async handle(input, { caller, services }) {
    const res = await services.keys.addPermissions({
      caller,
      keyId: input.keyId,
      permissions: input.permissions,
    });
    return { data: res.permissions.map(permissionData) };
  },
});
