import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ListRolesRequest, ListRolesResponseSchema } from "@latchkey/proto/identity/v1/identity_pb";
import { requirePermissions } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { pageOf, pageResult, storePage } from "../validation.ts";
import { roleView } from "../views.ts";

export function listRoles(deps: IdentityDeps) {
  return async (req: ListRolesRequest): Promise<MessageInitShape<typeof ListRolesResponseSchema>> => {
    const page = pageOf(req.page, req.search);
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["rbac.*.read_role"]);
    const rows = await deps.store.listRoles(caller.workspaceId, storePage(page));
    const { items, cursor, hasMore } = pageResult(rows, page);
    return { roles: items.map(roleView), page: { cursor, hasMore } };
  };
}
