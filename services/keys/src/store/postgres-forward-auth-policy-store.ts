import { type AuditRecord, insertAudit, type Sql, type TransactionSql } from "@latchkey/runtime";
import type { NewPolicy, PolicyRecord, PolicyRefusal, PolicyStore } from "./forward-auth-policy-store.ts";
import { KEYS_AUDIT_TABLE } from "./postgres-keys-store.ts";

interface PolicyRow {
  id: string;
  workspace_id: string;
  name: string;
  position: number | null;
  is_default: boolean;
  definition_json: string;
  created_at: string | number;
  updated_at: string | number;
}

const COLUMNS =
  "id, workspace_id, name, position, is_default, definition::text AS definition_json, created_at, updated_at";

const recordOf = (r: PolicyRow): PolicyRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  name: r.name,
  position: r.position,
  isDefault: r.is_default,
  definitionJson: r.definition_json,
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

/** forward_auth_policies (forward-auth-policies-migration.ts); audit records go with each change. */
export class PostgresPolicyStore implements PolicyStore {
  constructor(private readonly sql: Sql) {}

  /** `change` in a transaction holding the workspace's policy lock, with `audit` when it returns a record or true. */
  private locked<T>(
    workspaceId: string,
    audit: AuditRecord | undefined,
    change: (tx: TransactionSql) => Promise<T>,
  ): Promise<T> {
    return this.sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(hashtext(${`forward-auth-policies:${workspaceId}`}))`;
      const result = await change(tx);
      if (audit && (result === true || (typeof result === "object" && result !== null))) {
        await insertAudit(tx, KEYS_AUDIT_TABLE, audit);
      }
      return result;
    }) as Promise<T>;
  }

  create(
    policy: NewPolicy,
    position: number | undefined,
    max: number,
    audit?: AuditRecord,
  ): Promise<PolicyRecord | PolicyRefusal> {
    return this.locked(policy.workspaceId, audit, async (tx): Promise<PolicyRecord | PolicyRefusal> => {
      const [counts] = await tx<{ total: number; ordinary: number; defaults: number; named: number }[]>`
        SELECT count(*)::int AS total, count(position)::int AS ordinary,
               count(*) FILTER (WHERE is_default)::int AS defaults,
               count(*) FILTER (WHERE name = ${policy.name})::int AS named
          FROM forward_auth_policies WHERE workspace_id = ${policy.workspaceId}`;
      if (counts!.total >= max) return "full";
      if (counts!.named > 0) return "name taken";
      if (policy.isDefault && counts!.defaults > 0) return "default taken";
      const at = policy.isDefault ? null : Math.min(position ?? counts!.ordinary, counts!.ordinary);
      if (at !== null) {
        await tx`UPDATE forward_auth_policies SET position = position + 1
          WHERE workspace_id = ${policy.workspaceId} AND position >= ${at}`;
      }
      const [row] = await tx.unsafe<PolicyRow[]>(
        `INSERT INTO forward_auth_policies (id, workspace_id, name, position, is_default, definition, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6::text::jsonb, $7, $7) RETURNING ${COLUMNS}`,
        [
          policy.id,
          policy.workspaceId,
          policy.name,
          at,
          policy.isDefault,
          policy.definitionJson,
          policy.createdAt,
        ],
      );
      return recordOf(row!);
    });
  }

  async find(workspaceId: string, id: string): Promise<PolicyRecord | undefined> {
    const [row] = await this.sql.unsafe<PolicyRow[]>(
      `SELECT ${COLUMNS} FROM forward_auth_policies WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, id],
    );
    return row && recordOf(row);
  }

  async list(workspaceId: string, after: number | undefined, limit: number): Promise<PolicyRecord[]> {
    const rows = await this.sql.unsafe<PolicyRow[]>(
      `SELECT ${COLUMNS} FROM forward_auth_policies
        WHERE workspace_id = $1 AND ($2::int IS NULL OR position IS NULL OR position > $2::int)
        ORDER BY position ASC NULLS LAST LIMIT $3`,
      [workspaceId, after ?? null, limit],
    );
    return rows.map(recordOf);
  }

  update(
    workspaceId: string,
    id: string,
    change: { name?: string; definitionJson?: string; position?: number },
    at: number,
    audit?: AuditRecord,
  ): Promise<PolicyRecord | "name taken" | undefined> {
    return this.locked(workspaceId, audit, async (tx): Promise<PolicyRecord | "name taken" | undefined> => {
      const [current] = await tx<{ position: number | null }[]>`
        SELECT position FROM forward_auth_policies WHERE workspace_id = ${workspaceId} AND id = ${id}`;
      if (current === undefined) return undefined;
      if (change.name !== undefined) {
        const [taken] = await tx`SELECT 1 FROM forward_auth_policies
          WHERE workspace_id = ${workspaceId} AND name = ${change.name} AND id <> ${id}`;
        if (taken) return "name taken";
      }
      let position = current.position;
      if (change.position !== undefined && current.position !== null) {
        const [counted] = await tx<{ ordinary: number }[]>`
          SELECT count(position)::int AS ordinary FROM forward_auth_policies WHERE workspace_id = ${workspaceId}`;
        const ordinary = counted!.ordinary;
        const from = current.position;
        const to = Math.min(change.position, ordinary - 1);
        if (to < from) {
          await tx`UPDATE forward_auth_policies SET position = position + 1
            WHERE workspace_id = ${workspaceId} AND position >= ${to} AND position < ${from}`;
        } else if (to > from) {
          await tx`UPDATE forward_auth_policies SET position = position - 1
            WHERE workspace_id = ${workspaceId} AND position > ${from} AND position <= ${to}`;
        }
        position = to;
      }
      const [row] = await tx.unsafe<PolicyRow[]>(
        `UPDATE forward_auth_policies SET name = COALESCE($3, name),
           definition = COALESCE($4::text::jsonb, definition), position = $5, updated_at = $6
         WHERE workspace_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
        [workspaceId, id, change.name ?? null, change.definitionJson ?? null, position, at],
      );
      return recordOf(row!);
    });
  }

  delete(workspaceId: string, id: string, audit?: AuditRecord): Promise<boolean> {
    return this.locked(workspaceId, audit, async (tx) => {
      const [gone] = await tx<{ position: number | null }[]>`
        DELETE FROM forward_auth_policies WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING position`;
      if (gone === undefined) return false;
      if (gone.position !== null) {
        await tx`UPDATE forward_auth_policies SET position = position - 1
          WHERE workspace_id = ${workspaceId} AND position > ${gone.position}`;
      }
      return true;
    });
  }
}
