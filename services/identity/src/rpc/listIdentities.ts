import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  ListIdentitiesRequest,
  ListIdentitiesResponseSchema,
} from "@latchkey/proto/identity/v1/identity_pb";
import { requirePermissions } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { IdentityDeps } from "../deps.ts";
import { pageOf, pageResult, storePage } from "../validation.ts";
import { identityView } from "../views.ts";

export function listIdentities(deps: IdentityDeps) {
  return async (
    req: ListIdentitiesRequest,
  ): Promise<MessageInitShape<typeof ListIdentitiesResponseSchema>> => {
    const page = pageOf(req.page, req.search);
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["identity.*.read_identity"]);
    const rows = await deps.store.listIdentities(caller.workspaceId, storePage(page));
    const { items, cursor, hasMore } = pageResult(rows, page);
    return { identities: items.map(identityView), page: { cursor, hasMore } };
  };
}
