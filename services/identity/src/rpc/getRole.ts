import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GetRoleRequest, GetRoleResponseSchema } from "@latchkey/proto/identity/v1/identity_pb";
import { requirePermissions } from "@latchkey/runtime";
import { authenticatedCaller, visibleRole } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { referenceOf } from "../validation.ts";
import { roleView } from "../views.ts";

export function getRole(deps: IdentityDeps) {
  return async (req: GetRoleRequest): Promise<MessageInitShape<typeof GetRoleResponseSchema>> => {
    const ref = referenceOf(req.role, "/role");
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["rbac.*.read_role"]);
    return { role: roleView(await visibleRole(deps, caller, ref)) };
  };
}
