import { Type } from "@sinclair/typebox";
import { permissionData } from "../json.ts";
import { route } from "../route.ts";
import { Closed, SLUG_PATTERN, Str } from "../schema.ts";

/** Replaces the role's permissions with exactly these; `[]` clears them. Answers the set now held. */
export const setRolePermissions = route({
  schema: Closed({
    // The reference's ResourceIdentifier: a role id or a name.
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
