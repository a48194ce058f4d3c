import { Type } from "@sinclair/typebox";
import { Permission } from "../../answers.ts";
import { permissionData } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, SLUG_PATTERN, Str } from "../../schema.ts";

/** Replaces the role's permissions with exactly these; `[]` clears them. Answers the set now held. */
export const setRolePermissions = route({
  audited: true,
  answer: Type.Array(Permission),
  example: { roleId: "role_123", permissions: ["documents.read"] },
  rootKey: { needs: ["rbac.*.add_permission_to_role", "rbac.*.remove_permission_from_role"] },
  errors: [404],
  schema: Closed({
    // Unkey's ResourceIdentifier: a role id or a name.
    roleId: Str(3, 255, "^[a-zA-Z0-9_-]+$"),
    permissions: Type.Array(Str(1, 128, SLUG_PATTERN), { maxItems: 1000 }),
  }),
  async handle(input, { caller, services }) {
    const res = await services.identity.setRolePermissions({
      caller,
      role: input.roleId,
      permissions: input.permissions,
    });
    return { data: res.permissions.map(permissionData) };
  },
});
