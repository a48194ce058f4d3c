import { type AuditRecord, MemoryAuditLog } from "@latchkey/runtime";
import {
  type CreatePortalResult,
  DEAD_SESSION_KEPT_MS,
  isLive,
  type PageQuery,
  type PortalPatch,
  type PortalRecord,
  type PortalStore,
  PRUNE_PER_CREATE,
  type SessionRecord,
  type UpdatePortalResult,
} from "./portal-store.ts";

/** The store in memory, for unit tests and the in-memory stack; the same behaviour as PostgreSQL's. */
export class MemoryPortalStore extends MemoryAuditLog implements PortalStore {
  readonly portals = new Map<string, PortalRecord>();
  readonly sessions = new Map<string, SessionRecord>();

  async createPortal(p: PortalRecord, max: number, audit: AuditRecord): Promise<CreatePortalResult> {
    const mine = [...this.portals.values()].filter((x) => x.workspaceId === p.workspaceId);
    if (mine.length >= max) return "full";
    if (p.slug !== null && mine.some((x) => x.slug === p.slug)) return "slug taken";
    this.portals.set(p.id, { ...p });
    await this.recordAudit(audit);
    return "created";
  }

  async findPortal(workspaceId: string, id: string) {
    const p = this.portals.get(id);
    return p && p.workspaceId === workspaceId ? { ...p } : undefined;
  }

  async findPortalBySlug(workspaceId: string, slug: string) {
    for (const p of this.portals.values())
      if (p.workspaceId === workspaceId && p.slug === slug) return { ...p };
    return undefined;
  }

  async listPortals(workspaceId: string, page: PageQuery) {
    return [...this.portals.values()]
      .filter((p) => p.workspaceId === workspaceId && (page.after === undefined || p.id > page.after))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, page.limit)
      .map((p) => ({ ...p }));
  }

  async updatePortal(
    workspaceId: string,
    id: string,
    patch: PortalPatch,
    audit: AuditRecord,
  ): Promise<UpdatePortalResult> {
    const p = this.portals.get(id);
    if (!p || p.workspaceId !== workspaceId) return "missing";
    if (
      patch.slug != null &&
      [...this.portals.values()].some(
        (x) => x.workspaceId === workspaceId && x.id !== id && x.slug === patch.slug,
      )
    ) {
      return "slug taken";
    }
    if (patch.name !== undefined) p.name = patch.name;
    if (patch.slug !== undefined) p.slug = patch.slug;
    if (patch.branding !== undefined) Object.assign(p, patch.branding);
    if (patch.sessionTtlMs !== undefined) p.sessionTtlMs = patch.sessionTtlMs;
    p.updatedAt = patch.updatedAt;
    await this.recordAudit(audit);
    return "updated";
  }

  async deletePortal(workspaceId: string, id: string, audit: AuditRecord) {
    const p = this.portals.get(id);
    if (!p || p.workspaceId !== workspaceId) return false;
    this.portals.delete(id);
    for (const [sid, s] of this.sessions) if (s.portalId === id) this.sessions.delete(sid);
    await this.recordAudit(audit);
    return true;
  }

  async createSession(s: SessionRecord, maxLive: number, now: number, audit: AuditRecord) {
    let pruned = 0;
    for (const [id, x] of this.sessions) {
      if (pruned >= PRUNE_PER_CREATE) break;
      if (x.workspaceId === s.workspaceId && deadAt(x) < now - DEAD_SESSION_KEPT_MS) {
        this.sessions.delete(id);
        pruned++;
      }
    }
    // Counted and inserted with no await between, so concurrent creations cannot pass the bound together.
    if (this.live(s.workspaceId, now) >= maxLive) return false;
    this.sessions.set(s.id, { ...s, scopes: [...s.scopes], rbacPermissions: [...s.rbacPermissions] });
    await this.recordAudit(audit);
    return true;
  }

  async redeemCode(
    codeHash: string,
    tokenHash: string,
    now: number,
    audit: (s: SessionRecord) => AuditRecord,
  ) {
    for (const s of this.sessions.values()) {
      if (s.codeHash !== codeHash) continue;
      const portal = this.portals.get(s.portalId);
      if (!portal || s.tokenHash !== null || s.revokedAt !== null || s.codeExpiresAt <= now) return undefined;
      s.codeHash = null;
      s.tokenHash = tokenHash;
      s.expiresAt = now + portal.sessionTtlMs;
      await this.recordAudit(audit(s));
      return { ...s };
    }
    return undefined;
  }

  async sessionByToken(tokenHash: string) {
    for (const s of this.sessions.values()) if (s.tokenHash === tokenHash) return { ...s };
    return undefined;
  }

  async findSession(workspaceId: string, id: string) {
    const s = this.sessions.get(id);
    return s && s.workspaceId === workspaceId ? { ...s } : undefined;
  }

  async revokeSession(workspaceId: string, id: string, now: number, audit: AuditRecord) {
    const s = this.sessions.get(id);
    if (!s || s.workspaceId !== workspaceId || s.revokedAt !== null) return false;
    s.revokedAt = now;
    s.codeHash = null;
    await this.recordAudit(audit);
    return true;
  }

  async liveSessions(workspaceId: string, now: number) {
    return this.live(workspaceId, now);
  }

  private live(workspaceId: string, now: number) {
    let n = 0;
    for (const s of this.sessions.values()) if (s.workspaceId === workspaceId && isLive(s, now)) n++;
    return n;
  }
}

const deadAt = (s: SessionRecord) =>
  s.revokedAt ?? (s.tokenHash === null ? s.codeExpiresAt : (s.expiresAt ?? 0));
