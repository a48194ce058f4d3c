import { type AuditRecord, insertAudit, PostgresAuditedStore, type Sql } from "@latchkey/runtime";
import {
  type CreatePortalResult,
  DEAD_SESSION_KEPT_MS,
  type PageQuery,
  type PortalPatch,
  type PortalRecord,
  type PortalStore,
  PRUNE_PER_CREATE,
  type SessionRecord,
  type UpdatePortalResult,
} from "./portal-store.ts";

/** The portal context's audit records (migrations.ts). */
export const PORTAL_AUDIT_TABLE = "portal_audit_log";

interface PortalRow {
  id: string;
  workspace_id: string;
  api_id: string;
  name: string;
  slug: string | null;
  title: string | null;
  accent_color: string | null;
  logo_url: string | null;
  session_ttl_ms: string;
  created_at: string;
  updated_at: string;
}

interface SessionRow {
  id: string;
  workspace_id: string;
  portal_id: string;
  external_id: string;
  scopes: string[];
  preview: boolean;
  encrypt_key: boolean;
  rbac_permissions: string[];
  return_url: string | null;
  code_hash: string | null;
  code_expires_at: string;
  token_hash: string | null;
  expires_at: string | null;
  revoked_at: string | null;
  created_at: string;
}

const portalOf = (r: PortalRow): PortalRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  apiId: r.api_id,
  name: r.name,
  slug: r.slug,
  title: r.title,
  accentColor: r.accent_color,
  logoUrl: r.logo_url,
  sessionTtlMs: Number(r.session_ttl_ms),
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

const sessionOf = (r: SessionRow): SessionRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  portalId: r.portal_id,
  externalId: r.external_id,
  scopes: r.scopes,
  preview: r.preview,
  encryptKey: r.encrypt_key,
  rbacPermissions: r.rbac_permissions,
  returnUrl: r.return_url,
  codeHash: r.code_hash,
  codeExpiresAt: Number(r.code_expires_at),
  tokenHash: r.token_hash,
  expiresAt: r.expires_at === null ? null : Number(r.expires_at),
  revokedAt: r.revoked_at === null ? null : Number(r.revoked_at),
  createdAt: Number(r.created_at),
});

/** PostgreSQL's unique_violation: a slug taken by a concurrent change. */
const isUniqueViolation = (err: unknown) => (err as { code?: string }).code === "23505";

/**
 * The store in PostgreSQL (or PGlite in the embedded default). Counting bounds take the workspace's
 * advisory lock, so concurrent creations cannot pass a bound together.
 */
export class PostgresPortalStore extends PostgresAuditedStore implements PortalStore {
  constructor(sql: Sql) {
    super(sql, PORTAL_AUDIT_TABLE);
  }

  async createPortal(p: PortalRecord, max: number, audit: AuditRecord): Promise<CreatePortalResult> {
    try {
      return (await this.sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(hashtext(${`portals:${p.workspaceId}`}))`;
        const [{ n }] =
          (await tx`SELECT count(*)::int AS n FROM portals WHERE workspace_id = ${p.workspaceId}`) as unknown as [
            { n: number },
          ];
        if (n >= max) return "full";
        await tx`
          INSERT INTO portals (id, workspace_id, api_id, name, slug, title, accent_color, logo_url,
                               session_ttl_ms, created_at, updated_at)
          VALUES (${p.id}, ${p.workspaceId}, ${p.apiId}, ${p.name}, ${p.slug}, ${p.title}, ${p.accentColor},
                  ${p.logoUrl}, ${p.sessionTtlMs}, ${p.createdAt}, ${p.updatedAt})`;
        await insertAudit(tx, PORTAL_AUDIT_TABLE, audit);
        return "created";
      })) as CreatePortalResult;
    } catch (err) {
      if (isUniqueViolation(err)) return "slug taken";
      throw err;
    }
  }

  async findPortal(workspaceId: string, id: string) {
    const rows = await this.sql<
      PortalRow[]
    >`SELECT * FROM portals WHERE workspace_id = ${workspaceId} AND id = ${id}`;
    return rows[0] ? portalOf(rows[0]) : undefined;
  }

  async findPortalBySlug(workspaceId: string, slug: string) {
    const rows = await this.sql<PortalRow[]>`
      SELECT * FROM portals WHERE workspace_id = ${workspaceId} AND slug = ${slug}`;
    return rows[0] ? portalOf(rows[0]) : undefined;
  }

  async listPortals(workspaceId: string, page: PageQuery) {
    const rows = await this.sql<PortalRow[]>`
      SELECT * FROM portals
      WHERE workspace_id = ${workspaceId}
        ${page.after !== undefined ? this.sql`AND id COLLATE "C" > ${page.after}` : this.sql``}
      ORDER BY id COLLATE "C"
      LIMIT ${page.limit}`;
    return rows.map(portalOf);
  }

  async updatePortal(
    workspaceId: string,
    id: string,
    u: PortalPatch,
    audit: AuditRecord,
  ): Promise<UpdatePortalResult> {
    try {
      const updated = await this.audited(
        audit,
        async (sql) =>
          (
            await sql`
              UPDATE portals SET updated_at = ${u.updatedAt}
                ${u.name !== undefined ? sql`, name = ${u.name}` : sql``}
                ${u.slug !== undefined ? sql`, slug = ${u.slug}` : sql``}
                ${u.branding !== undefined ? sql`, title = ${u.branding.title}, accent_color = ${u.branding.accentColor}, logo_url = ${u.branding.logoUrl}` : sql``}
                ${u.sessionTtlMs !== undefined ? sql`, session_ttl_ms = ${u.sessionTtlMs}` : sql``}
              WHERE workspace_id = ${workspaceId} AND id = ${id}
              RETURNING id`
          ).length > 0,
        (made) => made,
      );
      return updated ? "updated" : "missing";
    } catch (err) {
      if (isUniqueViolation(err)) return "slug taken";
      throw err;
    }
  }

  async deletePortal(workspaceId: string, id: string, audit: AuditRecord) {
    return this.audited(
      audit,
      async (tx) =>
        (await tx`DELETE FROM portals WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING id`)
          .length > 0,
      (deleted) => deleted,
    );
  }

  async createSession(s: SessionRecord, maxLive: number, now: number, audit: AuditRecord) {
    return this.sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(hashtext(${`portal_sessions:${s.workspaceId}`}))`;
      const before = now - DEAD_SESSION_KEPT_MS;
      await tx`
        DELETE FROM portal_sessions WHERE id IN (
          SELECT id FROM portal_sessions
          WHERE workspace_id = ${s.workspaceId}
            AND COALESCE(revoked_at, CASE WHEN token_hash IS NULL THEN code_expires_at ELSE expires_at END) < ${before}
          LIMIT ${PRUNE_PER_CREATE})`;
      if ((await liveIn(tx as unknown as Sql, s.workspaceId, now)) >= maxLive) return false;
      await tx`
        INSERT INTO portal_sessions (id, workspace_id, portal_id, external_id, scopes, preview, encrypt_key,
                                     rbac_permissions, return_url, code_hash, code_expires_at, token_hash,
                                     expires_at, revoked_at, created_at)
        VALUES (${s.id}, ${s.workspaceId}, ${s.portalId}, ${s.externalId}, ${s.scopes}::text[], ${s.preview},
                ${s.encryptKey}, ${s.rbacPermissions}::text[], ${s.returnUrl}, ${s.codeHash}, ${s.codeExpiresAt}, ${s.tokenHash}, ${s.expiresAt}, ${s.revokedAt},
                ${s.createdAt})`;
      await insertAudit(tx, PORTAL_AUDIT_TABLE, audit);
      return true;
    }) as Promise<boolean>;
  }

  async redeemCode(
    codeHash: string,
    tokenHash: string,
    now: number,
    audit: (s: SessionRecord) => AuditRecord,
  ) {
    return this.sql.begin(async (tx) => {
      // FOR UPDATE: of two exchanges of one code, the second waits and then finds it redeemed.
      const rows = await tx<(SessionRow & { session_ttl_ms: string })[]>`
        SELECT s.*, p.session_ttl_ms FROM portal_sessions s JOIN portals p ON p.id = s.portal_id
        WHERE s.code_hash = ${codeHash} AND s.token_hash IS NULL AND s.revoked_at IS NULL
          AND s.code_expires_at > ${now}
        FOR UPDATE OF s`;
      if (!rows[0]) return undefined;
      const s = sessionOf(rows[0]);
      const until = now + Number(rows[0].session_ttl_ms);
      const updated = await tx`
        UPDATE portal_sessions SET code_hash = NULL, token_hash = ${tokenHash}, expires_at = ${until}
        WHERE id = ${s.id} AND token_hash IS NULL RETURNING id`;
      if (updated.length === 0) return undefined;
      const redeemed = { ...s, codeHash: null, tokenHash, expiresAt: until };
      await insertAudit(tx, PORTAL_AUDIT_TABLE, audit(redeemed));
      return redeemed;
    }) as Promise<SessionRecord | undefined>;
  }

  async sessionByToken(tokenHash: string) {
    const rows = await this.sql<SessionRow[]>`SELECT * FROM portal_sessions WHERE token_hash = ${tokenHash}`;
    return rows[0] ? sessionOf(rows[0]) : undefined;
  }

  async findSession(workspaceId: string, id: string) {
    const rows = await this.sql<SessionRow[]>`
      SELECT * FROM portal_sessions WHERE workspace_id = ${workspaceId} AND id = ${id}`;
    return rows[0] ? sessionOf(rows[0]) : undefined;
  }

  async revokeSession(workspaceId: string, id: string, now: number, audit: AuditRecord) {
    return this.audited(
      audit,
      async (tx) =>
        (
          await tx`
            UPDATE portal_sessions SET revoked_at = ${now}, code_hash = NULL
            WHERE workspace_id = ${workspaceId} AND id = ${id} AND revoked_at IS NULL
            RETURNING id`
        ).length > 0,
      (revoked) => revoked,
    );
  }

  liveSessions(workspaceId: string, now: number) {
    return liveIn(this.sql, workspaceId, now);
  }
}

async function liveIn(sql: Sql, workspaceId: string, now: number): Promise<number> {
  const [{ n }] = (await sql`
    SELECT count(*)::int AS n FROM portal_sessions
    WHERE workspace_id = ${workspaceId} AND revoked_at IS NULL
      AND (CASE WHEN token_hash IS NULL THEN code_expires_at ELSE expires_at END) > ${now}`) as unknown as [
    { n: number },
  ];
  return n;
}
