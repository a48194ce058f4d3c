import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GetKeyRequest, GetKeyResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { need, requirePermissions } from "@latchkey/runtime";
import { authenticatedCaller, visibleKey } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import { identitiesById } from "../rbac.ts";
import { recoverPlaintext } from "../recovery.ts";
import { keyView } from "../views.ts";

export function getKey(deps: KeysDeps) {
  return async (req: GetKeyRequest): Promise<MessageInitShape<typeof GetKeyResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const key = await visibleKey(deps, caller, req.keyId);
    // As Unkey: a key of the caller's workspace it may not read is a 403, not a 404.
    requirePermissions(caller, [
      need("api", key.apiId, "read_key"),
      ...(req.decrypt ? [need("api", key.apiId, "decrypt_key")] : []),
    ]);
    const plaintext = req.decrypt ? await recoverPlaintext(deps, key) : undefined;
    const identity = (await identitiesById(deps, caller, [key.identityId])).get(key.identityId ?? "");
    return { key: keyView(deps.lastUsed.latest(key), deps.clock.now(), plaintext, identity) };
  };
}
