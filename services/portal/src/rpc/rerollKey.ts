import type { MessageInitShape } from "@bufbuild/protobuf";
import type { RerollKeyRequest, RerollKeyResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import { domainError, ErrorReason, invalidInput, need } from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import {
  ADD_PERMISSION_TO_KEY,
  ADD_ROLE_TO_KEY,
  liveSession,
  requireNotPreview,
  requireScope,
  sessionAudit,
  sessionCaller,
} from "../session.ts";
import { ownedKey } from "./owned.ts";

/** The furthest the original may be kept working, as keys.rerollKey takes it (unix ms 4102444800000). */
const MAX_EXPIRATION = 4_102_444_800_000n;

/**
 * portal.rerollKey: keys.rerollKey of one of the end user's own keys (else 404). The keys service is
 * handed `create_key` and `read_key` on the portal's API, and `encrypt_key` for a recoverable key
 * when the session was minted with it (its new key is recoverable too); a recoverable key of a
 * session minted without it answers 403 here, naming what the minting root key lacked. Likewise the
 * new key is given the original's roles and direct permissions: for a key holding roles the keys
 * service is handed `rbac.*.add_role_to_key`, for one holding permissions
 * `rbac.*.add_permission_to_key`, when the session's minter held it; else 403 here, naming it.
 */
export function rerollKey(deps: PortalDeps) {
  return async (req: RerollKeyRequest): Promise<MessageInitShape<typeof RerollKeyResponseSchema>> => {
    const s = await liveSession(deps, req.auth);
    requireScope(s, "keys:reroll");
    requireNotPreview(s);
    if (req.expiration < 0n || req.expiration > MAX_EXPIRATION) {
      throw invalidInput("/expiration", "expiration must be 0 to 4102444800000 ms.");
    }
    const key = await ownedKey(deps, s, req.keyId);
    if (key.recoverable && !s.session.encryptKey) {
      throw domainError(
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        `The key is recoverable, and this portal session may not reroll recoverable keys: it needs a session minted by a root key holding '${need("api", s.portal.apiId, "encrypt_key")}'.`,
      );
    }
    const grants = [
      ...(key.roles.length > 0 ? [ADD_ROLE_TO_KEY] : []),
      ...(key.permissions.length > 0 ? [ADD_PERMISSION_TO_KEY] : []),
    ];
    const lacked = grants.filter((p) => !s.session.rbacPermissions.includes(p));
    if (lacked.length > 0) {
      const what = lacked.map((p) => (p === ADD_ROLE_TO_KEY ? "roles" : "permissions")).join(" and ");
      throw domainError(
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        `The key holds ${what}, and this portal session may not give them to a new key: it needs a session minted by a root key holding ${lacked.map((p) => `'${p}'`).join(" and ")}.`,
      );
    }
    const res = await deps.keys.rerollKey({
      caller: sessionCaller(
        s,
        ["create_key", "read_key", ...(key.recoverable ? ["encrypt_key"] : [])],
        grants,
      ),
      keyId: key.keyId,
      expiration: req.expiration,
    });
    await deps.store.recordAudit(
      sessionAudit(
        deps,
        s.session,
        "portal.rerollKey",
        [
          { type: "key", id: key.keyId },
          { type: "key", id: res.keyId },
        ],
        s.requestId,
      ),
    );
    return { keyId: res.keyId, key: res.key };
  };
}
