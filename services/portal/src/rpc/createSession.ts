import type { MessageInitShape } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { type Caller, CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import type { CreateSessionRequest, CreateSessionResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import {
  authenticatedCaller,
  domainError,
  ErrorReason,
  errorDetailOf,
  holds,
  need,
  requirePermissions,
  succeeded,
} from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import { COPYING_GRANTS, newSessionId } from "../session.ts";
import type { PortalRecord } from "../store/portal-store.ts";
import { hashOf, newCode } from "../tokens.ts";
import { externalIdOf, portalNotFound, returnUrlOf, type Scope, scopesOf } from "../validation.ts";

/** What each scope needs of the minting root key on the portal's API, as Unkey's createSession says. */
const SCOPE_NEEDS: Record<Scope, string[]> = {
  "keys:read": ["read_key", "read_api"],
  "keys:create": ["create_key"],
  "keys:reroll": ["create_key"],
  "analytics:read": ["read_analytics"],
};

/**
 * The scopes that make keys. Over an API that holds recoverable keys they also need `encrypt_key`,
 * as Unkey's createSession asks of a keyspace that stores encrypted keys: a rerolled recoverable key
 * is recoverable too, and so is a key the session creates there.
 */
const MAKES_KEYS: readonly Scope[] = ["keys:create", "keys:reroll"];

/**
 * portal.createSession. Without `portal.<id>.create_portal_session` the portal answers 404, as a
 * missing one; a scope the root key could not use itself answers 403 for the whole request, so a
 * session never carries more than its minter holds. A session that may make keys (not a preview)
 * over an API holding a recoverable key needs `encrypt_key` too, and is the only kind whose caller
 * carries it (`encryptKey`). A keys:reroll session (not a preview) keeps which of
 * `rbac.*.add_role_to_key` and `rbac.*.add_permission_to_key` its minter held, without asking for
 * them: a reroll needs them only for a key holding roles or direct permissions (rpc/rerollKey.ts).
 * The code is answered once and kept hashed.
 */
export function createSession(deps: PortalDeps) {
  return async (req: CreateSessionRequest): Promise<MessageInitShape<typeof CreateSessionResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const portal = await portalOf(deps, caller.workspaceId, req.portal);
    if (!portal || !holds(caller.permissions, `portal.${portal.id}.create_portal_session`)) {
      throw portalNotFound(req.portal);
    }
    const externalId = externalIdOf(req.externalId);
    const scopes = scopesOf(req.scopes);
    const returnUrl = returnUrlOf(req.returnUrl);
    const encryptKey =
      !req.preview &&
      scopes.some((s) => MAKES_KEYS.includes(s)) &&
      (await holdsRecoverableKeys(deps, caller, portal.apiId));
    // Not asked of the minter (most keys hold no roles or permissions): kept, so that a reroll of a key
    // holding them hands on exactly these, and answers 403 naming one the minter lacked.
    const rbacPermissions =
      !req.preview && scopes.includes("keys:reroll")
        ? COPYING_GRANTS.filter((p) => holds(caller.permissions, p))
        : [];
    requirePermissions(caller, [
      ...new Set([
        ...scopes.flatMap((s) => SCOPE_NEEDS[s].map((a) => need("api", portal.apiId, a))),
        ...(encryptKey ? [need("api", portal.apiId, "encrypt_key")] : []),
      ]),
    ]);
    const id = newSessionId();
    const code = newCode();
    const now = deps.clock.now();
    const codeExpiresAt = now + deps.settings.codeTtlMs;
    const max = deps.settings.maxLiveSessionsPerWorkspace;
    const created = await deps.store.createSession(
      {
        id,
        workspaceId: caller.workspaceId,
        portalId: portal.id,
        externalId,
        scopes,
        preview: req.preview,
        encryptKey,
        rbacPermissions,
        returnUrl,
        codeHash: hashOf(code),
        codeExpiresAt,
        tokenHash: null,
        expiresAt: null,
        revokedAt: null,
        createdAt: now,
      },
      max,
      now,
      succeeded(
        deps,
        caller,
        "portal.createSession",
        [
          { type: "portal", id: portal.id },
          { type: "portal_session", id },
        ],
        [
          "externalId",
          "scopes",
          ...(req.preview ? ["preview"] : []),
          ...(returnUrl !== null ? ["returnUrl"] : []),
        ],
      ),
    );
    if (!created) {
      throw domainError(
        ErrorReason.PRECONDITION_FAILED,
        `The workspace already has ${max} live portal sessions, the most it may have; revoke some, or wait for them to expire.`,
      );
    }
    return { sessionId: id, code, codeExpiresAt: BigInt(codeExpiresAt) };
  };
}

/** A portal by id, else by slug: `portal` may be either. */
async function portalOf(
  deps: PortalDeps,
  workspaceId: string,
  portal: string,
): Promise<PortalRecord | undefined> {
  if (portal.length < 3 || portal.length > 255) return undefined;
  return (
    (await deps.store.findPortal(workspaceId, portal)) ??
    (await deps.store.findPortalBySlug(workspaceId, portal))
  );
}

/**
 * Whether the portal's API holds a recoverable key, asked of the keys service as the minting root key
 * reading that one API. An API deleted since the portal was made holds none.
 */
async function holdsRecoverableKeys(deps: PortalDeps, minter: Caller, apiId: string): Promise<boolean> {
  const caller = create(CallerSchema, {
    workspaceId: minter.workspaceId,
    rootKeyId: minter.rootKeyId,
    permissions: [need("api", apiId, "read_api")],
    requestId: minter.requestId,
  });
  try {
    return (await deps.keys.getApi({ caller, apiId })).holdsRecoverableKeys;
  } catch (err) {
    if (errorDetailOf(err)?.reason === ErrorReason.API_NOT_FOUND) return false;
    throw err;
  }
}
