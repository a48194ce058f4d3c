import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  DeletePermissionRequest,
  DeletePermissionResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import { requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, permissionNotFound, visiblePermission } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { identityChanged } from "../events.ts";
import { referenceOf } from "../validation.ts";

/** Deletes the permission and takes it out of every role. */
export function deletePermission(deps: IdentityDeps) {
  return async (
    req: DeletePermissionRequest,
  ): Promise<MessageInitShape<typeof DeletePermissionResponseSchema>> => {
    const ref = referenceOf(req.permission, "/permission");
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["rbac.*.delete_permission"]);
    const permission = await visiblePermission(deps, caller, ref);
    const audit = succeeded(deps, caller, "permissions.deletePermission", [
      { type: "permission", id: permission.id },
    ]);
    if (!(await deps.store.deletePermission(caller.workspaceId, permission.id, audit)))
      throw permissionNotFound(ref);
    await identityChanged(deps, {
      workspaceId: caller.workspaceId,
      permissionId: permission.id,
      permissionSlug: permission.slug,
      deleted: true,
    });
    return {};
  };
}
