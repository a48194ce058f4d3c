import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  SetRolePermissionsRequest,
  SetRolePermissionsResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import { requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, roleNotFound, visibleRole } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { identityChanged } from "../events.ts";
import { announceCreated, permissionCandidates, requireCreatePermission } from "../permission-candidates.ts";
import { referenceOf, slugsOf } from "../validation.ts";
import { permissionView } from "../views.ts";

/** Replaces the role's permissions atomically ([] clears them); missing slugs are created when the caller may. */
export function setRolePermissions(deps: IdentityDeps) {
  return async (
    req: SetRolePermissionsRequest,
  ): Promise<MessageInitShape<typeof SetRolePermissionsResponseSchema>> => {
    const ref = referenceOf(req.role, "/roleId");
    const slugs = slugsOf(req.permissions);
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["rbac.*.add_permission_to_role", "rbac.*.remove_permission_from_role"]);
    const role = await visibleRole(deps, caller, ref);
    const wanted = await permissionCandidates(deps, caller, slugs);
    requireCreatePermission(caller, wanted.missing);
    const permissions = await deps.store.setRolePermissions(
      caller.workspaceId,
      role.id,
      wanted.candidates,
      succeeded(
        deps,
        caller,
        "permissions.setRolePermissions",
        [{ type: "role", id: role.id }],
        ["permissions"],
      ),
    );
    if (!permissions) throw roleNotFound(ref);
    await announceCreated(deps, wanted, permissions);
    await identityChanged(deps, { workspaceId: caller.workspaceId, roleId: role.id, roleName: role.name });
    return { permissions: permissions.map(permissionView) };
  };
}
