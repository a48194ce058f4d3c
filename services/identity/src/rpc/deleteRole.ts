import type { MessageInitShape } from "@bufbuild/protobuf";
import type { DeleteRoleRequest, DeleteRoleResponseSchema } from "@latchkey/proto/identity/v1/identity_pb";
import { requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, roleNotFound, visibleRole } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { identityChanged } from "../events.ts";
import { referenceOf } from "../validation.ts";

/** Deletes the role; its permissions stay. */
export function deleteRole(deps: IdentityDeps) {
  return async (req: DeleteRoleRequest): Promise<MessageInitShape<typeof DeleteRoleResponseSchema>> => {
    const ref = referenceOf(req.role, "/role");
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["rbac.*.delete_role"]);
    const role = await visibleRole(deps, caller, ref);
    const audit = succeeded(deps, caller, "permissions.deleteRole", [{ type: "role", id: role.id }]);
    if (!(await deps.store.deleteRole(caller.workspaceId, role.id, audit))) throw roleNotFound(ref);
    await identityChanged(deps, {
      workspaceId: caller.workspaceId,
      roleId: role.id,
      roleName: role.name,
      deleted: true,
    });
    return {};
  };
}
