import { type AuditRecord, insertAudit, newId, PostgresAuditedStore, type Sql } from "@latchkey/runtime";
import type { Namespace, NamespacePage, Override, OverridePage, RatelimitStore } from "./ratelimit-store.ts";

interface NamespaceRow {
  id: string;
  workspace_id: string;
  name: string;
}

interface OverrideRow {
  id: string;
  namespace_id: string;
  identifier: string;
  limit: number;
  duration: number;
}

const namespaceOf = (r: NamespaceRow): Namespace => ({ id: r.id, workspaceId: r.workspace_id, name: r.name });
const overrideOf = (r: OverrideRow): Override => ({
  id: r.id,
  namespaceId: r.namespace_id,
  identifier: r.identifier,
  limit: r.limit,
  duration: r.duration,
});

/** The ratelimit context's audit records (migrations.ts, version 2). */
export const RATELIMIT_AUDIT_TABLE = "ratelimit_audit_log";

export class PostgresRatelimitStore extends PostgresAuditedStore implements RatelimitStore {
  constructor(sql: Sql) {
    super(sql, RATELIMIT_AUDIT_TABLE);
  }

  async namespaceById(workspaceId: string, id: string): Promise<Namespace | undefined> {
    const [row] = await this.sql<NamespaceRow[]>`
      SELECT id, workspace_id, name FROM ratelimit_namespaces WHERE workspace_id = ${workspaceId} AND id = ${id}`;
    return row && namespaceOf(row);
  }

  async namespaceByName(workspaceId: string, name: string): Promise<Namespace | undefined> {
    const [row] = await this.sql<NamespaceRow[]>`
      SELECT id, workspace_id, name FROM ratelimit_namespaces WHERE workspace_id = ${workspaceId} AND name = ${name}`;
    return row && namespaceOf(row);
  }

  async listNamespaces(
    workspaceId: string,
    page: { limit: number; after?: string; ids?: readonly string[] },
  ): Promise<NamespacePage> {
    const rows = await this.sql<NamespaceRow[]>`
      SELECT id, workspace_id, name FROM ratelimit_namespaces
      WHERE workspace_id = ${workspaceId}
        ${page.after === undefined ? this.sql`` : this.sql`AND id COLLATE "C" > ${page.after}`}
        ${page.ids === undefined ? this.sql`` : this.sql`AND id = ANY(${page.ids as string[]}::text[])`}
      ORDER BY id COLLATE "C" LIMIT ${page.limit + 1}`;
    const namespaces = rows.slice(0, page.limit).map(namespaceOf);
    return rows.length > page.limit ? { namespaces, next: namespaces.at(-1)!.id } : { namespaces };
  }

  async createNamespace(workspaceId: string, name: string): Promise<Namespace> {
    const [row] = await this.sql<NamespaceRow[]>`
      INSERT INTO ratelimit_namespaces (id, workspace_id, name) VALUES (${newId("rlns")}, ${workspaceId}, ${name})
      ON CONFLICT (workspace_id, name) DO NOTHING
      RETURNING id, workspace_id, name`;
    if (row) return namespaceOf(row);
    const existing = await this.namespaceByName(workspaceId, name);
    if (!existing) throw new Error(`namespace '${name}' neither inserted nor found`);
    return existing;
  }

  async setOverride(
    input: Omit<Override, "id">,
    audit?: (override: Override) => AuditRecord,
  ): Promise<Override> {
    return this.sql.begin(async (tx) => {
      const [row] = await tx<OverrideRow[]>`
      INSERT INTO ratelimit_overrides (id, namespace_id, identifier, "limit", duration)
      VALUES (${newId("rlor")}, ${input.namespaceId}, ${input.identifier}, ${input.limit}, ${input.duration})
      ON CONFLICT (namespace_id, identifier)
      DO UPDATE SET "limit" = EXCLUDED."limit", duration = EXCLUDED.duration, updated_at = now()
      RETURNING id, namespace_id, identifier, "limit", duration`;
      const override = overrideOf(row!);
      if (audit) await insertAudit(tx, RATELIMIT_AUDIT_TABLE, audit(override));
      return override;
    }) as Promise<Override>;
  }

  async getOverride(namespaceId: string, identifier: string): Promise<Override | undefined> {
    const [row] = await this.sql<OverrideRow[]>`
      SELECT id, namespace_id, identifier, "limit", duration FROM ratelimit_overrides
      WHERE namespace_id = ${namespaceId} AND identifier = ${identifier}`;
    return row && overrideOf(row);
  }

  async listOverrides(namespaceId: string, page: { limit: number; after?: string }): Promise<OverridePage> {
    const rows = await this.sql<OverrideRow[]>`
      SELECT id, namespace_id, identifier, "limit", duration FROM ratelimit_overrides
      WHERE namespace_id = ${namespaceId} ${page.after === undefined ? this.sql`` : this.sql`AND id COLLATE "C" > ${page.after}`}
      ORDER BY id COLLATE "C" LIMIT ${page.limit + 1}`;
    const overrides = rows.slice(0, page.limit).map(overrideOf);
    return rows.length > page.limit ? { overrides, next: overrides.at(-1)!.id } : { overrides };
  }

  async allOverrides(namespaceId: string): Promise<Override[]> {
    const rows = await this.sql<OverrideRow[]>`
      SELECT id, namespace_id, identifier, "limit", duration FROM ratelimit_overrides
      WHERE namespace_id = ${namespaceId}`;
    return rows.map(overrideOf);
  }

  async deleteOverride(namespaceId: string, identifier: string, audit?: AuditRecord): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const rows = await tx`
        DELETE FROM ratelimit_overrides WHERE namespace_id = ${namespaceId} AND identifier = ${identifier}
        RETURNING id`;
      if (rows.length > 0 && audit) await insertAudit(tx, RATELIMIT_AUDIT_TABLE, audit);
      return rows.length > 0;
    }) as Promise<boolean>;
  }

  async ping(): Promise<boolean> {
    await this.sql`SELECT 1`;
    return true;
  }
}
