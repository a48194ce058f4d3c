import type { MessageInitShape } from "@bufbuild/protobuf";
import type { WhoamiRequest, WhoamiResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { hashKey, invalidInput, need } from "@latchkey/runtime";
import { authenticatedCaller, keyIsVisible, keyNotFound, requireOrMask } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import { identitiesById } from "../rbac.ts";
import { keyView } from "../views.ts";

/** The key behind a plaintext, as getKey shows it (never its plaintext). */
export function whoami(deps: KeysDeps) {
  return async (req: WhoamiRequest): Promise<MessageInitShape<typeof WhoamiResponseSchema>> => {
    const caller = authenticatedCaller(req);
    if (req.key === "") throw invalidInput("/key", "key is required");
    // From the store, not the verification cache: a read should show the latest record.
    const key = await deps.store.findKeyByHash(caller.workspaceId, hashKey(req.key));
    if (!keyIsVisible(caller, key)) throw keyNotFound();
    // As Unkey: without read_key the key is not found, so a plaintext reveals nothing.
    requireOrMask(caller, [need("api", key.apiId, "read_key")], keyNotFound);
    const identity = (await identitiesById(deps, caller, [key.identityId])).get(key.identityId ?? "");
    return { key: keyView(deps.lastUsed.latest(key), deps.clock.now(), undefined, identity) };
  };
}
