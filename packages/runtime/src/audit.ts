// The audit log of management changes. Each context that changes state (keys, identity, ratelimit,
// webhooks) keeps its records in a table of its own, written in the same transaction as the change,
// so a change without its record, or a record without its change, cannot happen. The tables have
// one shape (auditTableSql), one insert and one list query, all here; the gateway merges them
// (gateway/src/routes/audit/list.ts).
import type { ServiceImpl } from "@connectrpc/connect";
import type { AuditLog, AuditService, ListAuditLogsRequest } from "@latchkey/proto/audit/v1/audit_pb";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import type { Clock } from "./clock.ts";
import type { Sql, TransactionSql } from "./db.ts";
import { ErrorReason, errorDetailOf, invalidInput } from "./errors.ts";
import { isIdOf, newId } from "./ids.ts";
import type { Logger } from "./logger.ts";
import { authenticatedCaller, requirePermissions } from "./permissions.ts";
import { type LoopProgress, loopProgress } from "./progress.ts";

/**
 * Who made a change: a root key through the gateway, the CLI, or Latchkey itself ("system": a
 * change no request asked for, e.g. the webhooks worker disabling a webhook whose receiver keeps failing), or
 * an end user's portal session (its id; services/portal).
 */
export type AuditActorType = "root_key" | "cli" | "system" | "portal_session";
export type AuditOutcome = "success" | "failure";

export interface AuditResource {
  /**
   * "api", "key", "identity", "permission", "role", "namespace", "override", "root_key", "workspace",
   * "webhook", "delivery".
   */
  type: string;
  id: string;
}

/**
 * One management change, or one refused by the service. Ids, names of fields and codes only:
 * never key material, secrets or meta values.
 */
export interface AuditRecord {
  id: string;
  workspaceId: string;
  /** Unix milliseconds. */
  time: number;
  actorType: AuditActorType;
  /** The root key's id, "cli" or "system". */
  actorId: string;
  /**
   * The public operation, e.g. "keys.createKey", "ratelimit.setOverride", "webhooks.create",
   * "cli.createRootKey"; or what the system did, e.g. "webhooks.disable".
   */
  operation: string;
  resources: AuditResource[];
  outcome: AuditOutcome;
  /** The error's reason when it failed (ErrorReason's name, e.g. "KEY_NOT_FOUND"); null on success. */
  errorCode: string | null;
  /** The gateway's request id (meta.requestId); "" for the CLI and the system. */
  requestId: string;
  /** Names of the fields the change set, e.g. ["name", "credits.remaining"]. */
  fields: string[];
}

/** A position in the order (time desc, id desc): records strictly after it are older. */
export interface AuditPosition {
  time: number;
  id: string;
}

export interface AuditQuery {
  limit: number;
  after?: AuditPosition | undefined;
  actorId?: string | undefined;
  resourceId?: string | undefined;
  operation?: string | undefined;
  outcome?: AuditOutcome | undefined;
  /** Unix ms, inclusive. */
  start?: number | undefined;
  /** Unix ms, exclusive. */
  end?: number | undefined;
}

/** Where a context's records are kept: its PostgreSQL table, or memory in unit tests. */
export interface AuditLogStore {
  /** A record on its own (a refused operation's failure): its own statement. */
  recordAudit(record: AuditRecord): Promise<void>;
  /** The workspace's records matching `query`, newest first, at most `query.limit`. */
  listAudit(workspaceId: string, query: AuditQuery): Promise<AuditRecord[]>;
}

/** Most records one list asks a context for (the public limit is 100; the gateway asks one more). */
export const MAX_AUDIT_PAGE = 101;

/** AUDIT_RETENTION_DAYS' default. */
export const DEFAULT_AUDIT_RETENTION_DAYS = 365;

/**
 * A context's audit table: the same shape for every context. The indexes serve listing one
 * workspace newest first, alone or by actor or operation (btree in the list's order), by resource
 * id (GIN over the ids, combined with the workspace's index), and the retention's deletes by time.
 * `actorTypes` are the actors whose records the table takes: the default is what the tables of keys,
 * identity and ratelimit were made with (their applied migrations must not change); a context the
 * system changes on its own passes "system".
 */
export function auditTableSql(
  table: string,
  actorTypes: readonly AuditActorType[] = ["root_key", "cli"],
): string {
  return `
CREATE TABLE ${table} (
  id text PRIMARY KEY,
  workspace_id text NOT NULL,
  time bigint NOT NULL,
  actor_type text NOT NULL CHECK (actor_type IN (${actorTypes.map((t) => `'${t}'`).join(", ")})),
  actor_id text NOT NULL,
  operation text NOT NULL,
  resources jsonb NOT NULL,
  resource_ids text[] NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('success', 'failure')),
  error_code text,
  request_id text NOT NULL,
  fields text[] NOT NULL
);
CREATE INDEX ${table}_page ON ${table} (workspace_id, time DESC, id COLLATE "C" DESC);
CREATE INDEX ${table}_actor ON ${table} (workspace_id, actor_id, time DESC, id COLLATE "C" DESC);
CREATE INDEX ${table}_operation ON ${table} (workspace_id, operation, time DESC, id COLLATE "C" DESC);
CREATE INDEX ${table}_resource_ids ON ${table} USING gin (resource_ids);
CREATE INDEX ${table}_time ON ${table} (time);
`;
}

/** Writes `record` with `sql`: inside a store's transaction (sql.begin's tx), it commits or rolls back with the change. */
export async function insertAudit(
  sql: Sql | TransactionSql,
  table: string,
  record: AuditRecord,
): Promise<void> {
  await sql`INSERT INTO ${sql(table)} (id, workspace_id, time, actor_type, actor_id, operation, resources,
      resource_ids, outcome, error_code, request_id, fields)
    VALUES (${record.id}, ${record.workspaceId}, ${record.time}, ${record.actorType}, ${record.actorId},
      ${record.operation}, ${JSON.stringify(record.resources)}::text::jsonb,
      ${record.resources.map((r) => r.id)}::text[], ${record.outcome}, ${record.errorCode},
      ${record.requestId}, ${record.fields}::text[])`;
}

interface AuditRow {
  id: string;
  workspace_id: string;
  time: number;
  actor_type: AuditActorType;
  actor_id: string;
  operation: string;
  resources: AuditResource[];
  outcome: AuditOutcome;
  error_code: string | null;
  request_id: string;
  fields: string[];
}

/** The workspace's records in `table` matching `query`, newest first (time desc, id desc in byte order). */
export async function listAudit(
  sql: Sql,
  table: string,
  workspaceId: string,
  query: AuditQuery,
): Promise<AuditRecord[]> {
  const none = sql``;
  const rows = await sql<
    AuditRow[]
  >`SELECT id, workspace_id, time, actor_type, actor_id, operation, resources,
      outcome, error_code, request_id, fields
    FROM ${sql(table)} WHERE workspace_id = ${workspaceId}
      ${query.after ? sql`AND (time, id COLLATE "C") < (${query.after.time}::bigint, ${query.after.id}::text)` : none}
      ${query.actorId ? sql`AND actor_id = ${query.actorId}` : none}
      ${query.resourceId ? sql`AND resource_ids @> ARRAY[${query.resourceId}::text]` : none}
      ${query.operation ? sql`AND operation = ${query.operation}` : none}
      ${query.outcome ? sql`AND outcome = ${query.outcome}` : none}
      ${query.start !== undefined ? sql`AND time >= ${query.start}::bigint` : none}
      ${query.end !== undefined ? sql`AND time < ${query.end}::bigint` : none}
    ORDER BY time DESC, id COLLATE "C" DESC LIMIT ${Math.min(query.limit, MAX_AUDIT_PAGE)}`;
  return rows.map((r) => ({
    id: r.id,
    workspaceId: r.workspace_id,
    time: r.time,
    actorType: r.actor_type,
    actorId: r.actor_id,
    operation: r.operation,
    resources: r.resources,
    outcome: r.outcome,
    errorCode: r.error_code,
    requestId: r.request_id,
    fields: r.fields,
  }));
}

/** Byte-order comparison of two records in the list's order: negative when `a` comes first (is newer). */
export function newestFirst(a: AuditPosition, b: AuditPosition): number {
  if (a.time !== b.time) return b.time - a.time;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

const matches = (r: AuditRecord, workspaceId: string, q: AuditQuery) =>
  r.workspaceId === workspaceId &&
  (q.after === undefined || newestFirst(q.after, r) < 0) &&
  (!q.actorId || r.actorId === q.actorId) &&
  (!q.resourceId || r.resources.some((x) => x.id === q.resourceId)) &&
  (!q.operation || r.operation === q.operation) &&
  (!q.outcome || r.outcome === q.outcome) &&
  (q.start === undefined || r.time >= q.start) &&
  (q.end === undefined || r.time < q.end);

/**
 * The in-memory stores' audit log (unit tests): the same records and order as the table. A store
 * writes its change's record only once the change is made, and neither when it throws.
 */
export class MemoryAuditLog implements AuditLogStore {
  readonly records: AuditRecord[] = [];

  async recordAudit(record: AuditRecord): Promise<void> {
    this.records.push(structuredClone(record));
  }

  /** For a store's mutation: records `record` when given. */
  add(record: AuditRecord | undefined): void {
    if (record) this.records.push(structuredClone(record));
  }

  async listAudit(workspaceId: string, query: AuditQuery): Promise<AuditRecord[]> {
    return this.records
      .filter((r) => matches(r, workspaceId, query))
      .sort(newestFirst)
      .slice(0, Math.min(query.limit, MAX_AUDIT_PAGE))
      .map((r) => structuredClone(r));
  }

  /** Deletes records older than `before`; answers how many. */
  prune(before: number): number {
    let n = 0;
    for (let i = this.records.length - 1; i >= 0; i--) {
      if (this.records[i]!.time < before) {
        this.records.splice(i, 1);
        n++;
      }
    }
    return n;
  }
}

/** Who did it: the root key the gateway resolved, the CLI, or the system. */
export function auditActor(caller: Caller | "cli" | "system"): {
  actorType: AuditActorType;
  actorId: string;
} {
  return caller === "cli" || caller === "system"
    ? { actorType: caller, actorId: caller }
    : { actorType: "root_key", actorId: caller.rootKeyId };
}

/** A success record of `operation` by `caller` at `time`. */
export function auditSuccess(
  caller: Caller | "cli" | "system",
  workspaceId: string,
  operation: string,
  resources: AuditResource[],
  fields: string[],
  time: number,
): AuditRecord {
  return {
    id: newId("audit"),
    workspaceId,
    time,
    ...auditActor(caller),
    operation,
    resources,
    outcome: "success",
    errorCode: null,
    requestId: typeof caller === "string" ? "" : caller.requestId,
    fields,
  };
}

/**
 * A refused request's resources as a failure record may keep them: an id the request gave is kept only
 * when it has the shape of a Latchkey id of its type (ids.ts, isIdOf); anything else the caller typed
 * (a key pasted instead of its id, an external id such as an e-mail, a name) leaves the type with id "",
 * so key material and personal data never reach the audit log (docs/security.md#audit-log).
 */
export const failureResources = (resources: AuditResource[]): AuditResource[] =>
  resources.map((r) => (isIdOf(r.type, r.id) ? r : { type: r.type, id: "" }));

/**
 * The failure record of a domain error (a refusal: not found, invalid input, insufficient
 * permissions, a conflict); undefined for anything else (a fault, whose change, if any, rolled back).
 * Its resources go through failureResources.
 */
export function auditFailure(
  caller: Caller,
  operation: string,
  resources: AuditResource[],
  err: unknown,
  time: number,
): AuditRecord | undefined {
  const detail = errorDetailOf(err);
  if (!detail || detail.reason === ErrorReason.UNSPECIFIED || detail.reason === ErrorReason.UNAVAILABLE) {
    return undefined;
  }
  return {
    ...auditSuccess(caller, caller.workspaceId, operation, failureResources(resources), [], time),
    outcome: "failure",
    errorCode: ErrorReason[detail.reason] ?? "UNKNOWN",
  };
}

/**
 * Runs a management operation; when it is refused with a domain error, writes its failure record
 * (never a success record: that one the store writes with the change) and throws the error on.
 */
export async function withFailureAudit<T>(
  audit: { store: AuditLogStore; now: () => number; log?: Logger },
  caller: Caller | undefined,
  operation: string,
  resources: AuditResource[],
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (err) {
    // Without an authenticated caller there is no workspace to write into.
    const record =
      caller && caller.workspaceId !== "" && auditFailure(caller, operation, resources, err, audit.now());
    if (record) {
      try {
        await audit.store.recordAudit(record);
      } catch (writeErr) {
        audit.log?.error({ err: writeErr, operation }, "could not write a failure's audit record");
      }
    }
    throw err;
  }
}

/**
 * What every context's PostgreSQL store shares: its audit table, and writing a change and its record in one
 * transaction. A store extends it with its table's name.
 */
export abstract class PostgresAuditedStore implements AuditLogStore {
  constructor(
    protected readonly sql: Sql,
    private readonly auditTable: string,
  ) {}

  async recordAudit(record: AuditRecord): Promise<void> {
    await insertAudit(this.sql, this.auditTable, record);
  }

  listAudit(workspaceId: string, query: AuditQuery): Promise<AuditRecord[]> {
    return listAudit(this.sql, this.auditTable, workspaceId, query);
  }

  /**
   * Runs `change` in a transaction that also writes `audit` when `made` says the change was made, so the
   * record commits or rolls back with it.
   */
  protected audited<T>(
    audit: AuditRecord | undefined,
    change: (tx: TransactionSql) => Promise<T>,
    made: (result: T) => boolean = () => true,
  ): Promise<T> {
    return this.sql.begin(async (tx) => {
      const result = await change(tx);
      if (audit && made(result)) await insertAudit(tx, this.auditTable, audit);
      return result;
    }) as Promise<T>;
  }
}

/** What an audited context lends the helpers below: where failure records go, its clock and its log. */
export interface AuditingDeps {
  store: AuditLogStore;
  clock: Clock;
  log?: Logger;
}

/**
 * `handler` as one of a context's management operations: a refusal leaves its failure record, naming
 * what the request named (`resources`); the success record is the store's to write with the change
 * (`succeeded`), in the change's transaction.
 */
export function audited<Req extends { caller?: Caller | undefined }, Res>(
  deps: AuditingDeps,
  operation: string,
  resources: (req: Req) => AuditResource[],
  handler: (req: Req) => Promise<Res>,
): (req: Req) => Promise<Res> {
  const audit = { store: deps.store, now: () => deps.clock.now(), ...(deps.log ? { log: deps.log } : {}) };
  return (req) => withFailureAudit(audit, req.caller, operation, resources(req), () => handler(req));
}

/** The success record of `operation` by `caller`, for the store to write with the change. */
export const succeeded = (
  deps: { clock: Clock },
  caller: Caller,
  operation: string,
  resources: AuditResource[],
  fields: string[] = [],
): AuditRecord => auditSuccess(caller, caller.workspaceId, operation, resources, fields, deps.clock.now());

/** `resources` with the empty ids left out (a request that named none). */
export const resourcesOf = (...all: [type: string, id: string | undefined][]): AuditResource[] =>
  all.filter(([, id]) => id).map(([type, id]) => ({ type, id: id as string }));

/** The permission auditLogs.list needs. */
export const AUDIT_READ = "audit.*.read";

const CURSOR_FIX =
  "Pass pagination.cursor of the previous answer unchanged, or omit cursor to start from the newest record.";

/** auditLogs.list's opaque cursor: base64url of the last record's "<time>.<id>"; records after it are older. */
export const encodeAuditCursor = (p: AuditPosition): string =>
  Buffer.from(`${p.time}.${p.id}`).toString("base64url");

/** The position a cursor names; INVALID_INPUT at /cursor, saying what to pass instead, when it names none. */
export function decodeAuditCursor(cursor: string): AuditPosition {
  const text = /^[A-Za-z0-9_-]{1,1024}$/.test(cursor)
    ? Buffer.from(cursor, "base64url").toString("utf8")
    : "";
  const m = /^(\d{1,16})\.([A-Za-z0-9_]{1,255})$/.exec(text);
  if (!m) throw invalidInput("/cursor", "cursor is not one auditLogs.list answered", CURSOR_FIX);
  return { time: Number(m[1]), id: m[2]! };
}

/** audit.v1.AuditService over one context's records. */
export function auditService(store: Pick<AuditLogStore, "listAudit">): ServiceImpl<typeof AuditService> {
  return {
    async listAuditLogs(req: ListAuditLogsRequest) {
      const caller = authenticatedCaller(req);
      requirePermissions(caller, [AUDIT_READ]);
      const after = req.cursor === "" ? undefined : decodeAuditCursor(req.cursor);
      if (req.start !== 0n && req.end !== 0n && req.end <= req.start) {
        throw invalidInput(
          "/end",
          "end must be after start",
          "Give an end later than start (unix milliseconds).",
        );
      }
      const records = await store.listAudit(caller.workspaceId, {
        limit: Math.max(1, Math.min(req.limit || 50, MAX_AUDIT_PAGE)),
        after,
        actorId: req.actorId || undefined,
        resourceId: req.resourceId || undefined,
        operation: req.operation || undefined,
        outcome: req.outcome === "success" || req.outcome === "failure" ? req.outcome : undefined,
        start: req.start ? Number(req.start) : undefined,
        end: req.end ? Number(req.end) : undefined,
      });
      return { logs: records.map(auditLogMessage) };
    },
  };
}

const auditLogMessage = (
  r: AuditRecord,
): Omit<AuditLog, "$typeName" | "resources"> & {
  resources: { type: string; id: string }[];
} => ({
  id: r.id,
  time: BigInt(r.time),
  actorType: r.actorType,
  actorId: r.actorId,
  operation: r.operation,
  resources: r.resources,
  outcome: r.outcome,
  errorCode: r.errorCode ?? "",
  requestId: r.requestId,
  fields: r.fields,
});

/**
 * Deletes records older than the retention from a context's table, in the background: every
 * `intervalMs`, in batches of `batch` rows (one short statement each, so a large backlog never
 * holds locks for long). stop() waits for a run under way.
 */
export class AuditPruner {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly sql: Sql,
    private readonly table: string,
    private readonly options: {
      retentionDays: number;
      now?: () => number;
      intervalMs?: number;
      batch?: number;
      log?: Logger;
      /** Marked at each statement and each run that finds nothing old; `audit.retention.<table>` by default. */
      progress?: LoopProgress;
    },
  ) {
    this.progress = options.progress ?? loopProgress(`audit.retention.${table}`);
  }

  private readonly progress: LoopProgress;

  /** Deletes every record older than the retention at `now`; answers how many. */
  async prune(now: number = (this.options.now ?? Date.now)()): Promise<number> {
    const before = now - this.options.retentionDays * 86_400_000;
    const batch = this.options.batch ?? 1000;
    const table = this.sql(this.table);
    let total = 0;
    for (;;) {
      const rows = await this.sql`DELETE FROM ${table} WHERE id IN (
          SELECT id FROM ${table} WHERE time < ${before}::bigint LIMIT ${batch})
        RETURNING 1`;
      total += rows.length;
      this.progress.mark();
      if (rows.length < batch || this.stopped) return total;
    }
  }

  /** Prunes now and then every intervalMs (default an hour) until stop(). */
  start(): this {
    const run = () => {
      if (this.running || this.stopped) return;
      this.running = this.prune()
        .catch((err: unknown) =>
          this.options.log?.error({ err, table: this.table }, "audit retention failed"),
        )
        .finally(() => {
          this.running = undefined;
        });
    };
    run();
    this.timer = setInterval(run, this.options.intervalMs ?? 3_600_000);
    this.timer.unref();
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
