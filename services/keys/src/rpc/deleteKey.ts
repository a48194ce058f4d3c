import type { MessageInitShape } from "@bufbuild/protobuf";
import type { DeleteKeyRequest, DeleteKeyResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { need, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller, keyNotFound, visibleKey } from "../access.ts";
import { apiResource, keyResource } from "../audit.ts";
import type { KeysDeps } from "../deps.ts";
import { keyChangeCommitted } from "./key-changed.ts";

/**
 * Ordinary deletion: the key stops verifying (NOT_FOUND) and its record stays
 * for analytics. Permanent: the record, its hash and any encrypted plaintext
 * are removed, so the same key string can be imported again.
 */
export function deleteKey(deps: KeysDeps) {
  return async (req: DeleteKeyRequest): Promise<MessageInitShape<typeof DeleteKeyResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const key = await visibleKey(deps, caller, req.keyId);
    requirePermissions(caller, [need("api", key.apiId, "delete_key")]);
    const deleted = await deps.store.deleteKey(
      key.id,
      req.permanent,
      deps.clock.now(),
      succeeded(
        deps,
        caller,
        "keys.deleteKey",
        [keyResource(key.id), apiResource(key.apiId)],
        req.permanent ? ["permanent"] : [],
      ),
    );
    // Another deletion got there first: it announces; this one answers as for a missing key.
    if (!deleted) throw keyNotFound();
    await keyChangeCommitted(deps, caller, key, "key.deleted", { permanent: req.permanent });
    return {};
  };
}
