import { randomBytes } from "node:crypto";
import {
  auditSuccess,
  hashKey,
  insertAudit,
  newId,
  rootPermissionProblem,
  type Sql,
  type TransactionSql,
} from "@latchkey/runtime";
import bs58 from "bs58";
import { KEYS_AUDIT_TABLE } from "./store/postgres-keys-store.ts";

/**
 * Workspace and root-key administration, for the CLI and for start-up. Plain
 * functions over the database, no RPC: the caller announces a revocation to
 * the gateways' root-key caches (apps/latchkey/src/key-changes.ts).
 * Problems are thrown as plain Errors whose message is meant for an operator.
 * Each change is audited (actor "cli") in the keys context's audit table, in
 * the change's transaction (packages/runtime/src/audit.ts).
 */

/** The CLI's audit record of `operation` in `workspaceId`. */
const cliAudit = (
  workspaceId: string,
  operation: string,
  resources: { type: string; id: string }[],
  fields: string[],
) => auditSuccess("cli", workspaceId, operation, resources, fields, Date.now());

export const DEFAULT_WORKSPACE_ID = "ws_default";

const ROOT_KEY_PREFIX = "lk_root_";

export interface NewRootKey {
  rootKeyId: string;
  /** The plaintext: shown once, stored only as its hash. */
  rootKey: string;
}

export interface RootKeyListing {
  id: string;
  workspaceId: string;
  workspaceName: string;
  start: string;
  permissions: string[];
  createdAt: number;
  revokedAt: number | null;
}

/** A new workspace and a root key holding `*` in it. */
export async function createWorkspace(sql: Sql, name: string): Promise<{ workspaceId: string } & NewRootKey> {
  if (name.trim() === "") throw new Error("a workspace needs a name");
  const workspaceId = newId("ws");
  return sql.begin(async (tx) => {
    const inserted =
      await tx`INSERT INTO workspaces (id, name, created_at) VALUES (${workspaceId}, ${name}, ${Date.now()})
      ON CONFLICT (name) DO NOTHING RETURNING id`;
    if (inserted.length === 0) throw new Error(`a workspace named '${name}' already exists`);
    const rootKey = await insertRootKey(tx as unknown as Sql, workspaceId, ["*"], null);
    await insertAudit(
      tx,
      KEYS_AUDIT_TABLE,
      cliAudit(
        workspaceId,
        "cli.createWorkspace",
        [
          { type: "workspace", id: workspaceId },
          { type: "root_key", id: rootKey.rootKeyId },
        ],
        ["name"],
      ),
    );
    return { workspaceId, ...rootKey };
  });
}

/** A new root key in a workspace given by id or name (default: the default workspace). */
export async function createRootKey(
  sql: Sql,
  options: { workspace?: string; permissions: string[]; name?: string },
): Promise<NewRootKey> {
  const permissions = [...new Set(options.permissions.map((p) => p.trim()).filter((p) => p !== ""))];
  if (permissions.length === 0)
    throw new Error("a root key needs at least one permission (for example api.*.verify_key)");
  const problems = permissions.map(rootPermissionProblem).filter((p) => p !== undefined);
  if (problems.length > 0) throw new Error(`invalid permissions: ${problems.join("; ")}`);
  const workspace = options.workspace ?? DEFAULT_WORKSPACE_ID;
  const [found] = await sql<
    { id: string }[]
  >`SELECT id FROM workspaces WHERE id = ${workspace} OR name = ${workspace}
    ORDER BY (id = ${workspace}) DESC LIMIT 1`;
  if (!found) throw new Error(`workspace '${workspace}' does not exist`);
  return sql.begin(async (tx) => {
    const created = await insertRootKey(tx as unknown as Sql, found.id, permissions, options.name ?? null);
    await insertAudit(
      tx,
      KEYS_AUDIT_TABLE,
      cliAudit(
        found.id,
        "cli.createRootKey",
        [{ type: "root_key", id: created.rootKeyId }],
        ["permissions", ...(options.name ? ["name"] : [])],
      ),
    );
    return created;
  }) as Promise<NewRootKey>;
}

export async function listRootKeys(sql: Sql): Promise<RootKeyListing[]> {
  const rows = await sql<
    {
      id: string;
      workspace_id: string;
      workspace_name: string;
      start: string;
      permissions: string[];
      created_at: number;
      revoked_at: number | null;
    }[]
  >`SELECT r.id, r.workspace_id, w.name AS workspace_name, r.start, r.permissions, r.created_at, r.revoked_at
    FROM root_keys r JOIN workspaces w ON w.id = r.workspace_id ORDER BY r.created_at, r.id`;
  return rows.map((r) => ({
    id: r.id,
    workspaceId: r.workspace_id,
    workspaceName: r.workspace_name,
    start: r.start,
    permissions: r.permissions,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  }));
}

/**
 * Revokes a root key; revoking it again keeps the first revocation time.
 * Answers the key's hash and workspace, for the announcement of the change.
 */
export async function revokeRootKey(
  sql: Sql | TransactionSql,
  id: string,
): Promise<{ revokedAt: number; hash: string; workspaceId: string }> {
  return inTransaction(sql, async (tx) => {
    const [before] = await tx<{ revoked_at: number | null }[]>`SELECT revoked_at FROM root_keys
      WHERE id = ${id} FOR UPDATE`;
    const [row] = await tx<{ revoked_at: number; hash: string; workspace_id: string }[]>`UPDATE root_keys
      SET revoked_at = COALESCE(revoked_at, ${Date.now()}) WHERE id = ${id}
      RETURNING revoked_at, hash, workspace_id`;
    if (!row) throw new Error(`root key '${id}' does not exist`);
    // Revoking it again changes nothing, so leaves no record.
    if (before?.revoked_at === null) {
      await insertAudit(
        tx,
        KEYS_AUDIT_TABLE,
        cliAudit(row.workspace_id, "cli.revokeRootKey", [{ type: "root_key", id }], ["revokedAt"]),
      );
    }
    return { revokedAt: row.revoked_at, hash: row.hash, workspaceId: row.workspace_id };
  });
}

/**
 * Makes exactly this string a root key holding `*` (for env
 * LATCHKEY_ROOT_KEY and the bootstrap key of `npm start`): created when
 * missing, restored to `*` when present. A revoked one stays revoked
 * (`revoked`): revoking the bootstrap key must outlast a restart. Running it
 * again changes nothing. Creating the key or restoring its permissions is
 * audited as cli.createRootKey in the same transaction; a run that changes
 * nothing writes no record.
 */
export async function ensureRootKey(
  sql: Sql,
  plaintext: string,
  workspaceId = DEFAULT_WORKSPACE_ID,
): Promise<{ rootKeyId: string; created: boolean; revoked: boolean }> {
  if (plaintext.length < 16) throw new Error("LATCHKEY_ROOT_KEY must be at least 16 characters");
  // What the gateway takes for a root key (gateway/src/auth.ts couldBeRootKey); any other it refuses unasked.
  if (plaintext.length > 256 || !/^[\x21-\x7e]+$/.test(plaintext))
    throw new Error("LATCHKEY_ROOT_KEY must be at most 256 characters of visible ASCII (no spaces)");
  const id = newId("rk");
  const hash = hashKey(plaintext);
  type Row = { id: string; workspace_id: string; created: boolean; revoked: boolean };
  return sql.begin(async (tx) => {
    // The update's WHERE makes an unchanged key answer no row: only a change is audited.
    const [changed] = await tx<Row[]>`INSERT INTO root_keys
        (id, workspace_id, hash, start, name, permissions, created_at)
      VALUES (${id}, ${workspaceId}, ${hash}, ${startOf(plaintext)}, ${"LATCHKEY_ROOT_KEY"},
        ${["*"]}::text[], ${Date.now()})
      ON CONFLICT (hash) DO UPDATE SET permissions = ARRAY['*']
        WHERE root_keys.permissions IS DISTINCT FROM ARRAY['*']::text[]
      RETURNING id, workspace_id, (id = ${id}) AS created, (revoked_at IS NOT NULL) AS revoked`;
    if (changed) {
      await insertAudit(
        tx,
        KEYS_AUDIT_TABLE,
        cliAudit(
          changed.workspace_id,
          "cli.createRootKey",
          [{ type: "root_key", id: changed.id }],
          changed.created ? ["permissions", "name"] : ["permissions"],
        ),
      );
      return { rootKeyId: changed.id, created: changed.created, revoked: changed.revoked };
    }
    const [row] = await tx<
      Row[]
    >`SELECT id, workspace_id, false AS created, (revoked_at IS NOT NULL) AS revoked
      FROM root_keys WHERE hash = ${hash}`;
    return { rootKeyId: row!.id, created: false, revoked: row!.revoked };
  }) as Promise<{ rootKeyId: string; created: boolean; revoked: boolean }>;
}

async function insertRootKey(sql: Sql, workspaceId: string, permissions: string[], name: string | null) {
  const rootKey = ROOT_KEY_PREFIX + bs58.encode(randomBytes(24));
  const rootKeyId = newId("rk");
  await sql`INSERT INTO root_keys (id, workspace_id, hash, start, name, permissions, created_at)
    VALUES (${rootKeyId}, ${workspaceId}, ${hashKey(rootKey)}, ${startOf(rootKey)}, ${name},
      ${permissions}::text[], ${Date.now()})`;
  return { rootKeyId, rootKey };
}

/** Runs `work` in `sql`'s transaction when it is one (key-changes.ts revokes and announces in one), else in a new one. */
function inTransaction<T>(sql: Sql | TransactionSql, work: (tx: TransactionSql) => Promise<T>): Promise<T> {
  return "begin" in sql ? (sql.begin(work) as Promise<T>) : work(sql);
}

/** What listings show of a root key: its prefix and 4 characters. */
function startOf(plaintext: string): string {
  const head = plaintext.startsWith(ROOT_KEY_PREFIX) ? ROOT_KEY_PREFIX : "";
  return plaintext.slice(0, head.length + 4);
}
