import type { MessageInitShape } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { type Caller, CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import type { PortalSchema, SessionAuth } from "@latchkey/proto/portal/v1/portal_pb";
import {
  type AuditRecord,
  type AuditResource,
  domainError,
  ErrorReason,
  need,
  newId,
} from "@latchkey/runtime";
import type { PortalDeps } from "./deps.ts";
import type { PortalRecord, SessionRecord } from "./store/portal-store.ts";
import { hashOf } from "./tokens.ts";
import type { Scope } from "./validation.ts";

/** A live session and its portal, as a session call acts on them. */
export interface LiveSession {
  session: SessionRecord;
  portal: PortalRecord;
  requestId: string;
}

const expired = () =>
  domainError(
    ErrorReason.UNAUTHENTICATED,
    "The portal session is unknown, expired or revoked; open the portal again from the application.",
  );

/**
 * The session a token opens, or 401: unknown, revoked, expired, or its portal deleted are all one
 * answer. Every session call starts here; nothing of the request but the token says who calls.
 */
export async function liveSession(deps: PortalDeps, auth: SessionAuth | undefined): Promise<LiveSession> {
  const token = auth?.token ?? "";
  if (token === "" || token.length > 255) throw expired();
  const session = await deps.store.sessionByToken(hashOf(token));
  const now = deps.clock.now();
  if (!session || session.revokedAt !== null || session.expiresAt === null || session.expiresAt <= now) {
    throw expired();
  }
  const portal = await deps.store.findPortal(session.workspaceId, session.portalId);
  if (!portal) throw expired();
  return { session, portal, requestId: auth?.requestId ?? "" };
}

/** 403 unless the session was granted `scope`. */
export function requireScope(s: LiveSession, scope: Scope): void {
  if (!s.session.scopes.includes(scope)) {
    throw domainError(
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      `The portal session was not granted the scope '${scope}'.`,
    );
  }
}

/** 403 for a change asked of a preview session: it shows the portal and changes nothing. */
export function requireNotPreview(s: LiveSession): void {
  if (s.session.preview) {
    throw domainError(
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      "A preview session shows the portal and changes nothing; create a session without preview to change keys.",
    );
  }
}

/**
 * The caller the keys and analytics services see for a session: its workspace, the session as the
 * actor, and only the permissions its scopes stand for, on its portal's API only, with `others`
 * beside them (the rbac permissions a reroll hands on, rpc/rerollKey.ts). Which of that API's keys
 * it touches, the end user's alone, is judged here before each call (rpc/rerollKey.ts).
 */
export function sessionCaller(s: LiveSession, permissions: string[], others: string[] = []): Caller {
  return create(CallerSchema, {
    workspaceId: s.session.workspaceId,
    rootKeyId: s.session.id,
    permissions: [...permissions.map((action) => need("api", s.portal.apiId, action)), ...others],
    requestId: s.requestId,
  });
}

/** The success record of a session's own act, its actor the session. */
export function sessionAudit(
  deps: PortalDeps,
  s: SessionRecord,
  operation: string,
  resources: AuditResource[],
  requestId: string,
  fields: string[] = [],
): AuditRecord {
  return {
    id: newId("audit"),
    workspaceId: s.workspaceId,
    time: deps.clock.now(),
    actorType: "portal_session",
    actorId: s.id,
    operation,
    resources: [{ type: "portal", id: s.portalId }, { type: "portal_session", id: s.id }, ...resources],
    outcome: "success",
    errorCode: null,
    requestId,
    fields,
  };
}

/** A portal as answered. */
export const portalView = (p: PortalRecord): MessageInitShape<typeof PortalSchema> => ({
  id: p.id,
  apiId: p.apiId,
  name: p.name,
  ...(p.slug !== null ? { slug: p.slug } : {}),
  branding: {
    ...(p.title !== null ? { title: p.title } : {}),
    ...(p.accentColor !== null ? { accentColor: p.accentColor } : {}),
    ...(p.logoUrl !== null ? { logoUrl: p.logoUrl } : {}),
  },
  sessionTtlMs: BigInt(p.sessionTtlMs),
  createdAt: BigInt(p.createdAt),
  updatedAt: BigInt(p.updatedAt),
});

/**
 * What keys.rerollKey needs to give the new key the original's roles and direct permissions, beside
 * create_key (services/keys/src/rbac-changes.ts): adding roles needs the first, adding permissions
 * the second. A keys:reroll session keeps those of them its minting root key held (rpc/createSession.ts).
 */
export const ADD_ROLE_TO_KEY = "rbac.*.add_role_to_key";
export const ADD_PERMISSION_TO_KEY = "rbac.*.add_permission_to_key";
export const COPYING_GRANTS: readonly string[] = [ADD_ROLE_TO_KEY, ADD_PERMISSION_TO_KEY];

/** A new session id. */
export const newSessionId = () => newId("ps");
