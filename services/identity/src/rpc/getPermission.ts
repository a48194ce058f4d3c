import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  GetPermissionRequest,
  GetPermissionResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import { requirePermissions } from "@latchkey/runtime";
import { authenticatedCaller, visiblePermission } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { referenceOf } from "../validation.ts";
import { permissionView } from "../views.ts";

export function getPermission(deps: IdentityDeps) {
  return async (req: GetPermissionRequest): Promise<MessageInitShape<typeof GetPermissionResponseSchema>> => {
    const ref = referenceOf(req.permission, "/permission");
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["rbac.*.read_permission"]);
    return { permission: permissionView(await visiblePermission(deps, caller, ref)) };
  };
}
