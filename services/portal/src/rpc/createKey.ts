import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreateKeyRequest, CreateKeyResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import { invalidInput } from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import { liveSession, requireNotPreview, requireScope, sessionAudit, sessionCaller } from "../session.ts";

/**
 * portal.createKey: a key of the portal's API for the session's externalId (its identity made when
 * missing). A session minted over an API that held recoverable keys, by a root key holding
 * `encrypt_key` there, creates a recoverable key, and only it hands the keys service `encrypt_key`.
 */
export function createKey(deps: PortalDeps) {
  return async (req: CreateKeyRequest): Promise<MessageInitShape<typeof CreateKeyResponseSchema>> => {
    const s = await liveSession(deps, req.auth);
    requireScope(s, "keys:create");
    requireNotPreview(s);
    if (req.name !== undefined && (req.name.length < 1 || req.name.length > 255)) {
      throw invalidInput("/name", "name must be 1 to 255 characters.");
    }
    const res = await deps.keys.createKey({
      caller: sessionCaller(s, ["create_key", ...(s.session.encryptKey ? ["encrypt_key"] : [])]),
      apiId: s.portal.apiId,
      externalId: s.session.externalId,
      name: req.name,
      recoverable: s.session.encryptKey,
    });
    await deps.store.recordAudit(
      sessionAudit(deps, s.session, "portal.createKey", [{ type: "key", id: res.keyId }], s.requestId, [
        ...(req.name !== undefined ? ["name"] : []),
      ]),
    );
    return { keyId: res.keyId, key: res.key };
  };
}
