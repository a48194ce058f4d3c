import { type AuditQuery, type AuditRecord, MemoryAuditLog } from "@latchkey/runtime";
import {
  byteOrder,
  type IdentityRecord,
  type IdentityStore,
  type IdentityUpdate,
  matchesSearch,
  type PageQuery,
  type PermissionRecord,
  type RoleRecord,
} from "./identity-store.ts";

type RoleRow = Omit<RoleRecord, "permissions">;

/** The IdentityStore in process memory, for unit tests and the one-process start. */
export class MemoryIdentityStore implements IdentityStore {
  private identities = new Map<string, IdentityRecord>();
  private permissions = new Map<string, PermissionRecord>();
  private roles = new Map<string, RoleRow>();
  /** role id -> permission ids */
  private rolePermissions = new Map<string, Set<string>>();
  /** The audit records each mutation writes with its change (tests read them here). */
  readonly audit = new MemoryAuditLog();

  recordAudit(record: AuditRecord): Promise<void> {
    return this.audit.recordAudit(record);
  }

  listAudit(workspaceId: string, query: AuditQuery): Promise<AuditRecord[]> {
    return this.audit.listAudit(workspaceId, query);
  }

  async insertIdentity(identity: IdentityRecord, audit?: AuditRecord) {
    const existing = this.identityWhere(identity.workspaceId, (i) => i.externalId === identity.externalId);
    if (existing) return { created: false, identity: structuredClone(existing) };
    const stored = structuredClone(identity);
    stored.ratelimits.sort((a, b) => byteOrder(a.name, b.name));
    this.identities.set(stored.id, stored);
    this.audit.add(audit);
    return { created: true, identity: structuredClone(stored) };
  }

  async findIdentity(workspaceId: string, idOrExternalId: string) {
    const found =
      this.identityWhere(workspaceId, (i) => i.id === idOrExternalId) ??
      this.identityWhere(workspaceId, (i) => i.externalId === idOrExternalId);
    return found && structuredClone(found);
  }

  async findIdentitiesByIds(workspaceId: string, ids: readonly string[]) {
    const wanted = new Set(ids);
    return [...this.identities.values()]
      .filter((i) => i.workspaceId === workspaceId && wanted.has(i.id))
      .map((i) => structuredClone(i));
  }

  async listIdentities(workspaceId: string, page: PageQuery) {
    return pageOf(
      [...this.identities.values()].filter(
        (i) => i.workspaceId === workspaceId && matchesSearch(page.search, i.id, i.externalId),
      ),
      page,
    ).map((i) => structuredClone(i));
  }

  async updateIdentity(workspaceId: string, id: string, update: IdentityUpdate, audit?: AuditRecord) {
    const identity = this.identityWhere(workspaceId, (i) => i.id === id);
    if (!identity) return undefined;
    if (update.meta !== undefined) identity.meta = update.meta;
    if (update.ipAllowList !== undefined) identity.ipAllowList = [...update.ipAllowList];
    if (update.ratelimits !== undefined) {
      const kept = new Map(identity.ratelimits.map((r) => [r.name, r.id]));
      identity.ratelimits = update.ratelimits
        .map((r) => ({ ...r, id: kept.get(r.name) ?? r.id }))
        .sort((a, b) => byteOrder(a.name, b.name));
    }
    identity.updatedAt = update.updatedAt;
    this.audit.add(audit);
    return structuredClone(identity);
  }

  async deleteIdentity(workspaceId: string, id: string, audit?: AuditRecord) {
    if (!this.identityWhere(workspaceId, (i) => i.id === id)) return false;
    this.audit.add(audit);
    return this.identities.delete(id);
  }

  async insertPermission(permission: PermissionRecord, audit?: AuditRecord) {
    if (this.permissionWhere(permission.workspaceId, (p) => p.slug === permission.slug)) return false;
    this.permissions.set(permission.id, { ...permission });
    this.audit.add(audit);
    return true;
  }

  async findPermission(workspaceId: string, idOrSlug: string) {
    const found =
      this.permissionWhere(workspaceId, (p) => p.id === idOrSlug) ??
      this.permissionWhere(workspaceId, (p) => p.slug === idOrSlug);
    return found && { ...found };
  }

  async findPermissionsBySlugs(workspaceId: string, slugs: readonly string[]) {
    const wanted = new Set(slugs);
    return [...this.permissions.values()]
      .filter((p) => p.workspaceId === workspaceId && wanted.has(p.slug))
      .map((p) => ({ ...p }));
  }

  async ensurePermissions(workspaceId: string, candidates: readonly PermissionRecord[]) {
    return candidates.map((c) => {
      const existing = this.permissionWhere(workspaceId, (p) => p.slug === c.slug);
      if (existing) return { ...existing };
      const inserted = { ...c, workspaceId };
      this.permissions.set(inserted.id, inserted);
      return { ...inserted };
    });
  }

  async listPermissions(workspaceId: string, page: PageQuery) {
    return pageOf(
      [...this.permissions.values()].filter(
        (p) =>
          p.workspaceId === workspaceId && matchesSearch(page.search, p.id, p.name, p.slug, p.description),
      ),
      page,
    ).map((p) => ({ ...p }));
  }

  async deletePermission(workspaceId: string, id: string, audit?: AuditRecord) {
    if (!this.permissionWhere(workspaceId, (p) => p.id === id)) return false;
    for (const ids of this.rolePermissions.values()) ids.delete(id);
    this.audit.add(audit);
    return this.permissions.delete(id);
  }

  async insertRole(role: RoleRow, permissions: readonly PermissionRecord[], audit?: AuditRecord) {
    if (this.roleWhere(role.workspaceId, (r) => r.name === role.name)) return undefined;
    const ensured = await this.ensurePermissions(role.workspaceId, permissions);
    this.roles.set(role.id, { ...role });
    this.rolePermissions.set(role.id, new Set(ensured.map((p) => p.id)));
    this.audit.add(audit);
    return this.withPermissions(role);
  }

  async findRole(workspaceId: string, idOrName: string) {
    const found =
      this.roleWhere(workspaceId, (r) => r.id === idOrName) ??
      this.roleWhere(workspaceId, (r) => r.name === idOrName);
    return found && this.withPermissions(found);
  }

  async findRolesByNames(workspaceId: string, names: readonly string[]) {
    const wanted = new Set(names);
    return [...this.roles.values()]
      .filter((r) => r.workspaceId === workspaceId && wanted.has(r.name))
      .map((r) => this.withPermissions(r));
  }

  async listRoles(workspaceId: string, page: PageQuery) {
    return pageOf(
      [...this.roles.values()].filter(
        (r) => r.workspaceId === workspaceId && matchesSearch(page.search, r.id, r.name, r.description),
      ),
      page,
    ).map((r) => this.withPermissions(r));
  }

  async setRolePermissions(
    workspaceId: string,
    roleId: string,
    permissions: readonly PermissionRecord[],
    audit?: AuditRecord,
  ) {
    const role = this.roleWhere(workspaceId, (r) => r.id === roleId);
    if (!role) return undefined;
    const ensured = await this.ensurePermissions(workspaceId, permissions);
    this.rolePermissions.set(role.id, new Set(ensured.map((p) => p.id)));
    this.audit.add(audit);
    return this.withPermissions(role).permissions;
  }

  async deleteRole(workspaceId: string, id: string, audit?: AuditRecord) {
    if (!this.roleWhere(workspaceId, (r) => r.id === id)) return false;
    this.audit.add(audit);
    this.rolePermissions.delete(id);
    return this.roles.delete(id);
  }

  private identityWhere(workspaceId: string, test: (i: IdentityRecord) => boolean) {
    for (const i of this.identities.values()) if (i.workspaceId === workspaceId && test(i)) return i;
    return undefined;
  }

  private permissionWhere(workspaceId: string, test: (p: PermissionRecord) => boolean) {
    for (const p of this.permissions.values()) if (p.workspaceId === workspaceId && test(p)) return p;
    return undefined;
  }

  private roleWhere(workspaceId: string, test: (r: RoleRow) => boolean) {
    for (const r of this.roles.values()) if (r.workspaceId === workspaceId && test(r)) return r;
    return undefined;
  }

  private withPermissions(role: RoleRow): RoleRecord {
    const permissions = [...(this.rolePermissions.get(role.id) ?? [])]
      .map((id) => this.permissions.get(id))
      .filter((p): p is PermissionRecord => p !== undefined)
      .map((p) => ({ ...p }))
      .sort((a, b) => byteOrder(a.slug, b.slug));
    return { ...role, permissions };
  }
}

function pageOf<T extends { id: string }>(items: T[], page: PageQuery): T[] {
  return items
    .filter((i) => page.after === undefined || i.id > page.after)
    .sort((a, b) => byteOrder(a.id, b.id))
    .slice(0, page.limit);
}
