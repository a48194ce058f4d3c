import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ListKeysRequest, ListKeysResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import type { PortalDeps } from "../deps.ts";
import { liveSession, requireScope, sessionCaller } from "../session.ts";

/**
 * portal.listKeys: apis.listKeys of the portal's API narrowed to the session's externalId, which
 * the request cannot name: it comes from the session alone.
 */
export function listKeys(deps: PortalDeps) {
  return async (req: ListKeysRequest): Promise<MessageInitShape<typeof ListKeysResponseSchema>> => {
    const s = await liveSession(deps, req.auth);
    requireScope(s, "keys:read");
    const res = await deps.keys.listKeys({
      caller: sessionCaller(s, ["read_key", "read_api"]),
      apiId: s.portal.apiId,
      externalId: s.session.externalId,
      limit: req.limit,
      cursor: req.cursor,
    });
    return { keys: res.keys, pagination: res.pagination };
  };
}
