import type { AuditLogStore, AuditRecord } from "@latchkey/runtime";

export interface PortalRecord {
  id: string;
  workspaceId: string;
  apiId: string;
  name: string;
  slug: string | null;
  title: string | null;
  accentColor: string | null;
  logoUrl: string | null;
  sessionTtlMs: number;
  createdAt: number;
  updatedAt: number;
}

export interface PortalPatch {
  name?: string;
  /** null removes it. */
  slug?: string | null;
  branding?: { title: string | null; accentColor: string | null; logoUrl: string | null };
  sessionTtlMs?: number;
  updatedAt: number;
}

export interface SessionRecord {
  id: string;
  workspaceId: string;
  portalId: string;
  externalId: string;
  scopes: string[];
  preview: boolean;
  /**
   * Whether the session's caller holds `encrypt_key` on its portal's API, so that it may reroll
   * recoverable keys and create keys recoverable: true only when the API held a recoverable key at
   * minting and the minting root key held `encrypt_key` there (rpc/createSession.ts).
   */
  encryptKey: boolean;
  /**
   * The rbac permissions the session's caller may hand keys.rerollKey to copy a key's roles and
   * direct permissions to its new key: of `rbac.*.add_role_to_key` and `rbac.*.add_permission_to_key`,
   * those the minting root key held, for a keys:reroll session that is not a preview; else none
   * (rpc/createSession.ts).
   */
  rbacPermissions: string[];
  returnUrl: string | null;
  /** SHA-256 of the exchange code; null once redeemed. */
  codeHash: string | null;
  codeExpiresAt: number;
  /** SHA-256 of the access token; null until the code is redeemed. */
  tokenHash: string | null;
  /** When the token stops working; null until the code is redeemed. */
  expiresAt: number | null;
  revokedAt: number | null;
  createdAt: number;
}

export interface PageQuery {
  limit: number;
  after: string | undefined;
}

export type CreatePortalResult = "created" | "full" | "slug taken";
export type UpdatePortalResult = "updated" | "missing" | "slug taken";

/**
 * Portals and their sessions. Every read and change names the workspace but the two a credential
 * finds its session by (redeemCode, sessionByToken): a code or token is the credential itself.
 */
export interface PortalStore extends AuditLogStore {
  /** "full" when the workspace has `max` portals already. */
  createPortal(p: PortalRecord, max: number, audit: AuditRecord): Promise<CreatePortalResult>;
  findPortal(workspaceId: string, id: string): Promise<PortalRecord | undefined>;
  findPortalBySlug(workspaceId: string, slug: string): Promise<PortalRecord | undefined>;
  listPortals(workspaceId: string, page: PageQuery): Promise<PortalRecord[]>;
  updatePortal(
    workspaceId: string,
    id: string,
    patch: PortalPatch,
    audit: AuditRecord,
  ): Promise<UpdatePortalResult>;
  /** Its sessions go with it. */
  deletePortal(workspaceId: string, id: string, audit: AuditRecord): Promise<boolean>;

  /**
   * False when the workspace has `maxLive` live sessions at `now` already. Sessions of the
   * workspace dead a while (expired, revoked, a code never used) are pruned on the way.
   */
  createSession(s: SessionRecord, maxLive: number, now: number, audit: AuditRecord): Promise<boolean>;
  /**
   * Redeems a code once: the session it opens gets `tokenHash` and expires its portal's
   * sessionTtlMs after `now`, and the code is gone; undefined when no unexpired, unredeemed,
   * unrevoked session has it. `audit` makes the record of the exchange, written with it.
   */
  redeemCode(
    codeHash: string,
    tokenHash: string,
    now: number,
    audit: (s: SessionRecord) => AuditRecord,
  ): Promise<SessionRecord | undefined>;
  /** The session a token opens, whatever its state (the caller judges expiry and revocation). */
  sessionByToken(tokenHash: string): Promise<SessionRecord | undefined>;
  findSession(workspaceId: string, id: string): Promise<SessionRecord | undefined>;
  /** False when there is no such session, or it was revoked already. */
  revokeSession(workspaceId: string, id: string, now: number, audit: AuditRecord): Promise<boolean>;
  /** Live sessions of the workspace at `now` (the fairness bound's count). */
  liveSessions(workspaceId: string, now: number): Promise<number>;
}

/** Whether a session counts against its workspace's bound at `now`. */
export const isLive = (s: SessionRecord, now: number) =>
  s.revokedAt === null &&
  (s.tokenHash === null ? s.codeExpiresAt > now : s.expiresAt !== null && s.expiresAt > now);

/** Dead sessions kept this long before pruning, so a late call still finds (and is refused by) them. */
export const DEAD_SESSION_KEPT_MS = 86_400_000;
/** Dead sessions pruned per session created. */
export const PRUNE_PER_CREATE = 100;
