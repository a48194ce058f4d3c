import { type AuditRecord, PostgresAuditedStore, type Sql, type TransactionSql } from "@latchkey/runtime";
import type postgres from "postgres";
import {
  byteOrder,
  type IdentityRecord,
  type IdentityStore,
  type IdentityUpdate,
  type PageQuery,
  type PermissionRecord,
  type RatelimitRecord,
  type RoleRecord,
} from "./identity-store.ts";

type Db = Sql | TransactionSql;

interface IdentityRow {
  id: string;
  workspace_id: string;
  external_id: string;
  meta: string | null;
  ip_allow_list: string[];
  created_at: number;
  updated_at: number;
}

interface RatelimitRow {
  id: string;
  identity_id: string;
  name: string;
  limit: number;
  duration: number;
  auto_apply: boolean;
}

interface PermissionRow {
  id: string;
  workspace_id: string;
  name: string;
  slug: string;
  description: string | null;
  created_at: number;
}

interface RoleRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  created_at: number;
}

/** The IdentityStore on PostgreSQL (or PGlite), tables from migrations.ts. */
/** The identity context's audit records (migrations.ts, version 2). */
export const IDENTITY_AUDIT_TABLE = "identity_audit_log";

export class PostgresIdentityStore extends PostgresAuditedStore implements IdentityStore {
  constructor(sql: Sql) {
    super(sql, IDENTITY_AUDIT_TABLE);
  }

  async insertIdentity(identity: IdentityRecord, audit?: AuditRecord) {
    const created = await this.audited(
      audit,
      async (tx) => {
        const inserted = await tx`
        INSERT INTO identities (id, workspace_id, external_id, meta, ip_allow_list, created_at, updated_at)
        VALUES (${identity.id}, ${identity.workspaceId}, ${identity.externalId}, ${identity.meta}::text::jsonb,
                ${identity.ipAllowList}::text[], ${identity.createdAt}, ${identity.updatedAt})
        ON CONFLICT (workspace_id, external_id) DO NOTHING
        RETURNING id`;
        if (inserted.length === 0) return false;
        await insertRatelimits(tx, identity.id, identity.ratelimits);
        return true;
      },
      (created) => created,
    );
    const stored = await this.findIdentityWhere(
      this.sql,
      identity.workspaceId,
      this.sql`external_id = ${identity.externalId}`,
    );
    // Only a delete racing this very insert leaves nothing to answer.
    if (!stored) throw new Error(`identity '${identity.externalId}' vanished while it was being created`);
    return { created, identity: stored };
  }

  async findIdentity(workspaceId: string, idOrExternalId: string) {
    return (
      (await this.findIdentityWhere(this.sql, workspaceId, this.sql`id = ${idOrExternalId}`)) ??
      (await this.findIdentityWhere(this.sql, workspaceId, this.sql`external_id = ${idOrExternalId}`))
    );
  }

  async findIdentitiesByIds(workspaceId: string, ids: readonly string[]) {
    if (ids.length === 0) return [];
    const rows = await this.sql<IdentityRow[]>`
      SELECT id, workspace_id, external_id, meta::text AS meta, ip_allow_list, created_at, updated_at FROM identities
      WHERE workspace_id = ${workspaceId} AND id = ANY(${[...ids]}::text[])`;
    return this.withRatelimits(this.sql, rows);
  }

  async listIdentities(workspaceId: string, page: PageQuery) {
    const rows = await this.sql<IdentityRow[]>`
      SELECT id, workspace_id, external_id, meta::text AS meta, ip_allow_list, created_at, updated_at FROM identities
      WHERE workspace_id = ${workspaceId}
        ${page.after !== undefined ? this.sql`AND id COLLATE "C" > ${page.after}` : this.sql``}
        ${
          page.search
            ? this.sql`AND (strpos(lower(id), lower(${page.search})) > 0
                         OR strpos(lower(external_id), lower(${page.search})) > 0)`
            : this.sql``
        }
      ORDER BY id COLLATE "C"
      LIMIT ${page.limit}`;
    return this.withRatelimits(this.sql, rows);
  }

  async updateIdentity(workspaceId: string, id: string, update: IdentityUpdate, audit?: AuditRecord) {
    return this.audited(
      audit,
      async (tx) => {
        const updated = await tx`
        UPDATE identities SET updated_at = ${update.updatedAt}
          ${update.meta !== undefined ? tx`, meta = ${update.meta}::text::jsonb` : tx``}
          ${update.ipAllowList !== undefined ? tx`, ip_allow_list = ${update.ipAllowList}::text[]` : tx``}
        WHERE workspace_id = ${workspaceId} AND id = ${id}
        RETURNING id`;
        if (updated.length === 0) return undefined;
        if (update.ratelimits !== undefined) {
          const names = update.ratelimits.map((r) => r.name);
          await tx`DELETE FROM identity_ratelimits WHERE identity_id = ${id} AND NOT (name = ANY(${names}::text[]))`;
          // A name already there keeps its row, and so its id.
          await insertRatelimits(tx, id, update.ratelimits, true);
        }
        return this.findIdentityWhere(tx, workspaceId, tx`id = ${id}`);
      },
      (updated) => updated !== undefined,
    );
  }

  async deleteIdentity(workspaceId: string, id: string, audit?: AuditRecord) {
    return this.audited(
      audit,
      async (tx) =>
        (await tx`DELETE FROM identities WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING id`)
          .length > 0,
      (deleted) => deleted,
    );
  }

  async insertPermission(permission: PermissionRecord, audit?: AuditRecord) {
    return this.audited(
      audit,
      async (tx) =>
        (
          await tx`
      INSERT INTO permissions ${tx(permissionRow(permission))}
      ON CONFLICT (workspace_id, slug) DO NOTHING
      RETURNING id`
        ).length > 0,
      (inserted) => inserted,
    );
  }

  async findPermission(workspaceId: string, idOrSlug: string) {
    const rows = await this.sql<PermissionRow[]>`
      SELECT * FROM permissions WHERE workspace_id = ${workspaceId} AND (id = ${idOrSlug} OR slug = ${idOrSlug})
      ORDER BY (id = ${idOrSlug}) DESC LIMIT 1`;
    return rows[0] && permissionOf(rows[0]);
  }

  async findPermissionsBySlugs(workspaceId: string, slugs: readonly string[]) {
    if (slugs.length === 0) return [];
    const rows = await this.sql<PermissionRow[]>`
      SELECT * FROM permissions WHERE workspace_id = ${workspaceId} AND slug = ANY(${[...slugs]}::text[])`;
    return rows.map(permissionOf);
  }

  async ensurePermissions(workspaceId: string, candidates: readonly PermissionRecord[]) {
    return ensurePermissions(this.sql, workspaceId, candidates);
  }

  async listPermissions(workspaceId: string, page: PageQuery) {
    const s = page.search;
    const rows = await this.sql<PermissionRow[]>`
      SELECT * FROM permissions
      WHERE workspace_id = ${workspaceId}
        ${page.after !== undefined ? this.sql`AND id COLLATE "C" > ${page.after}` : this.sql``}
        ${
          s
            ? this.sql`AND (strpos(lower(id), lower(${s})) > 0 OR strpos(lower(name), lower(${s})) > 0
                         OR strpos(lower(slug), lower(${s})) > 0
                         OR strpos(lower(coalesce(description, '')), lower(${s})) > 0)`
            : this.sql``
        }
      ORDER BY id COLLATE "C"
      LIMIT ${page.limit}`;
    return rows.map(permissionOf);
  }

  async deletePermission(workspaceId: string, id: string, audit?: AuditRecord) {
    // role_permissions rows go with it (ON DELETE CASCADE).
    return this.audited(
      audit,
      async (tx) =>
        (await tx`DELETE FROM permissions WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING id`)
          .length > 0,
      (deleted) => deleted,
    );
  }

  async insertRole(
    role: Omit<RoleRecord, "permissions">,
    permissions: readonly PermissionRecord[],
    audit?: AuditRecord,
  ) {
    return this.audited(
      audit,
      async (tx) => {
        const inserted = await tx`
        INSERT INTO roles (id, workspace_id, name, description, created_at)
        VALUES (${role.id}, ${role.workspaceId}, ${role.name}, ${role.description}, ${role.createdAt})
        ON CONFLICT (workspace_id, name) DO NOTHING
        RETURNING id`;
        if (inserted.length === 0) return undefined;
        const ensured = await ensurePermissions(tx, role.workspaceId, permissions);
        await linkPermissions(tx, role.id, ensured);
        return { ...role, permissions: sortedBySlug(ensured) };
      },
      (inserted) => inserted !== undefined,
    );
  }

  async findRole(workspaceId: string, idOrName: string) {
    const rows = await this.sql<RoleRow[]>`
      SELECT * FROM roles WHERE workspace_id = ${workspaceId} AND (id = ${idOrName} OR name = ${idOrName})
      ORDER BY (id = ${idOrName}) DESC LIMIT 1`;
    return (await this.withPermissions(this.sql, rows))[0];
  }

  async findRolesByNames(workspaceId: string, names: readonly string[]) {
    if (names.length === 0) return [];
    const rows = await this.sql<RoleRow[]>`
      SELECT * FROM roles WHERE workspace_id = ${workspaceId} AND name = ANY(${[...names]}::text[])`;
    return this.withPermissions(this.sql, rows);
  }

  async listRoles(workspaceId: string, page: PageQuery) {
    const s = page.search;
    const rows = await this.sql<RoleRow[]>`
      SELECT * FROM roles
      WHERE workspace_id = ${workspaceId}
        ${page.after !== undefined ? this.sql`AND id COLLATE "C" > ${page.after}` : this.sql``}
        ${
          s
            ? this.sql`AND (strpos(lower(id), lower(${s})) > 0 OR strpos(lower(name), lower(${s})) > 0
                         OR strpos(lower(coalesce(description, '')), lower(${s})) > 0)`
            : this.sql``
        }
      ORDER BY id COLLATE "C"
      LIMIT ${page.limit}`;
    return this.withPermissions(this.sql, rows);
  }

  async setRolePermissions(
    workspaceId: string,
    roleId: string,
    permissions: readonly PermissionRecord[],
    audit?: AuditRecord,
  ) {
    return this.audited(
      audit,
      async (tx) => {
        // Locking the role serialises concurrent replacements of its set.
        const role =
          await tx`SELECT id FROM roles WHERE workspace_id = ${workspaceId} AND id = ${roleId} FOR UPDATE`;
        if (role.length === 0) return undefined;
        const ensured = await ensurePermissions(tx, workspaceId, permissions);
        await tx`DELETE FROM role_permissions WHERE role_id = ${roleId}`;
        await linkPermissions(tx, roleId, ensured);
        return sortedBySlug(ensured);
      },
      (set) => set !== undefined,
    );
  }

  async deleteRole(workspaceId: string, id: string, audit?: AuditRecord) {
    return this.audited(
      audit,
      async (tx) =>
        (await tx`DELETE FROM roles WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING id`).length >
        0,
      (deleted) => deleted,
    );
  }

  private async findIdentityWhere(db: Db, workspaceId: string, condition: postgres.Fragment) {
    const rows = await db<IdentityRow[]>`
      SELECT id, workspace_id, external_id, meta::text AS meta, ip_allow_list, created_at, updated_at FROM identities WHERE workspace_id = ${workspaceId} AND ${condition}`;
    return (await this.withRatelimits(db, rows))[0];
  }

  private async withRatelimits(db: Db, rows: readonly IdentityRow[]): Promise<IdentityRecord[]> {
    if (rows.length === 0) return [];
    const limits = await db<RatelimitRow[]>`
      SELECT * FROM identity_ratelimits WHERE identity_id = ANY(${rows.map((r) => r.id)}::text[])
      ORDER BY name COLLATE "C"`;
    const byIdentity = new Map<string, RatelimitRecord[]>();
    for (const l of limits) {
      const list = byIdentity.get(l.identity_id) ?? [];
      list.push({ id: l.id, name: l.name, limit: l.limit, duration: l.duration, autoApply: l.auto_apply });
      byIdentity.set(l.identity_id, list);
    }
    return rows.map((r) => ({
      id: r.id,
      workspaceId: r.workspace_id,
      externalId: r.external_id,
      meta: r.meta,
      ratelimits: byIdentity.get(r.id) ?? [],
      ipAllowList: r.ip_allow_list,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    }));
  }

  private async withPermissions(db: Db, rows: readonly RoleRow[]): Promise<RoleRecord[]> {
    if (rows.length === 0) return [];
    const links = await db<(PermissionRow & { role_id: string })[]>`
      SELECT rp.role_id, p.* FROM role_permissions rp JOIN permissions p ON p.id = rp.permission_id
      WHERE rp.role_id = ANY(${rows.map((r) => r.id)}::text[])
      ORDER BY p.slug COLLATE "C"`;
    const byRole = new Map<string, PermissionRecord[]>();
    for (const l of links) {
      const list = byRole.get(l.role_id) ?? [];
      list.push(permissionOf(l));
      byRole.set(l.role_id, list);
    }
    return rows.map((r) => ({
      id: r.id,
      workspaceId: r.workspace_id,
      name: r.name,
      description: r.description,
      createdAt: r.created_at,
      permissions: byRole.get(r.id) ?? [],
    }));
  }
}

async function insertRatelimits(
  db: Db,
  identityId: string,
  ratelimits: readonly RatelimitRecord[],
  upsert = false,
) {
  if (ratelimits.length === 0) return;
  const rows = ratelimits.map((r) => ({
    id: r.id,
    identity_id: identityId,
    name: r.name,
    limit: r.limit,
    duration: r.duration,
    auto_apply: r.autoApply,
  }));
  await db`
    INSERT INTO identity_ratelimits ${db(rows)}
    ${
      upsert
        ? db`ON CONFLICT (identity_id, name) DO UPDATE
             SET "limit" = excluded."limit", duration = excluded.duration, auto_apply = excluded.auto_apply`
        : db``
    }`;
}

async function ensurePermissions(
  db: Db,
  workspaceId: string,
  candidates: readonly PermissionRecord[],
): Promise<PermissionRecord[]> {
  if (candidates.length === 0) return [];
  // Inserting in slug order keeps two transactions ensuring overlapping sets from deadlocking.
  const rows = [...candidates]
    .sort((a, b) => byteOrder(a.slug, b.slug))
    .map((c) => permissionRow({ ...c, workspaceId }));
  await db`INSERT INTO permissions ${db(rows)} ON CONFLICT (workspace_id, slug) DO NOTHING`;
  // A fresh statement sees rows a concurrent transaction committed meanwhile, so every slug is found.
  const found = await db<PermissionRow[]>`
    SELECT * FROM permissions
    WHERE workspace_id = ${workspaceId} AND slug = ANY(${candidates.map((c) => c.slug)}::text[])`;
  const bySlug = new Map(found.map((r) => [r.slug, permissionOf(r)]));
  return candidates.map((c) => {
    const found = bySlug.get(c.slug);
    if (!found) throw new Error(`permission '${c.slug}' vanished while it was being ensured`);
    return found;
  });
}

async function linkPermissions(db: Db, roleId: string, permissions: readonly PermissionRecord[]) {
  if (permissions.length === 0) return;
  const rows = permissions.map((p) => ({ role_id: roleId, permission_id: p.id }));
  await db`INSERT INTO role_permissions ${db(rows)} ON CONFLICT DO NOTHING`;
}

function permissionRow(p: PermissionRecord): PermissionRow {
  return {
    id: p.id,
    workspace_id: p.workspaceId,
    name: p.name,
    slug: p.slug,
    description: p.description,
    created_at: p.createdAt,
  };
}

function permissionOf(r: PermissionRow): PermissionRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    slug: r.slug,
    description: r.description,
    createdAt: r.created_at,
  };
}

const sortedBySlug = (ps: readonly PermissionRecord[]) => [...ps].sort((a, b) => byteOrder(a.slug, b.slug));
