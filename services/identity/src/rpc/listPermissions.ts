import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  ListPermissionsRequest,
  ListPermissionsResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import { requirePermissions } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { pageOf, pageResult, storePage } from "../validation.ts";
import { permissionView } from "../views.ts";

export function listPermissions(deps: IdentityDeps) {
  return async (
    req: ListPermissionsRequest,
  ): Promise<MessageInitShape<typeof ListPermissionsResponseSchema>> => {
    const page = pageOf(req.page, req.search);
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["rbac.*.read_permission"]);
    const rows = await deps.store.listPermissions(caller.workspaceId, storePage(page));
    const { items, cursor, hasMore } = pageResult(rows, page);
    return { permissions: items.map(permissionView), page: { cursor, hasMore } };
  };
}
