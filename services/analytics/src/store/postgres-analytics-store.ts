import type { Sql, TransactionSql } from "@latchkey/runtime";
import {
  type AnalyticsStore,
  type Granularity,
  type Grouping,
  QueryLimitError,
  type QueryOptions,
  type RatelimitCheck,
  type RatelimitCount,
  type RatelimitQuery,
  type Verification,
  type VerificationCount,
  type VerificationQuery,
} from "./analytics-store.ts";

/** The pool, or the transaction of a write in several parts. */
type Db = Sql | TransactionSql;

/** Rows per INSERT: a buffer's batch is one statement; a caller's huge array is a few, each a bounded message. */
const INSERT_CHUNK = 10_000;
/** PostgreSQL's type oid of boolean, for sql.array. */
const BOOL_OID = 16;
/** How long a batch id is kept: a retry later than that (of a write that landed) would count twice. */
const BATCH_IDS_KEPT_MS = 86_400_000;
/** How often the batch ids past BATCH_IDS_KEPT_MS are deleted. */
const PRUNE_EVERY_MS = 3_600_000;

/**
 * Analytics in PostgreSQL (tables in migrations.ts, analyticsPostgresMigrations):
 * the all-in-one process without ClickHouse keeps them in its own database,
 * PGlite by default, so they survive a restart like the keys do.
 *
 * Verifications are rolled up per millisecond as they are written: the rows of
 * one write that share their ms, workspace, api, key, identity, external id,
 * outcome and tag set are one row with their `count` and summed credits (the
 * same attributes in another write are another row). Every query takes
 * [start, end) in whole ms and buckets by the row's exact ms, so summing the
 * rolled-up rows answers exactly what summing the events would. Under load
 * (thousands a second of a few keys) that is several times fewer rows; with
 * one event per ms it is one row per event, as before.
 *
 * Rate-limit checks are rolled up the same way (rollUp serves both): one row
 * per ms, workspace, namespace, identifier, passed and override of a write,
 * with `count`, summed cost, and latency summed and maxed (so a range's mean
 * and max stay exact too). Limit, remaining and reset are one check's answer,
 * not an aggregate, and are not kept; nothing reads checks back here yet.
 *
 * Counting once is per batch (AnalyticsStore: "by batch"): the rows of one call
 * are deduplicated by request id, and a call with a batch id inserts that id
 * into analytics_batches atomically with the rows, so a repeated id (a retry of
 * a write whose answer was lost) stores nothing and answers 0. No request id is
 * looked up across calls: that index was the costliest part of each write.
 * A write of up to INSERT_CHUNK (rolled-up) rows is one statement, batch id
 * included (arrays unnested server-side).
 */
export class PostgresAnalyticsStore implements AnalyticsStore {
  private prunedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly sql: Sql) {}

  async insertVerifications(rows: readonly Verification[], batchId?: string): Promise<number> {
    const events = uniqueByRequestId(rows);
    if (events.length === 0) return 0;
    const parts = [
      ...chunks(
        rollUp(
          events,
          (v) =>
            `${v.time}\0${v.workspaceId}\0${v.apiId}\0${v.keyId}\0${v.identityId}\0${v.externalId}\0${v.outcome}\0${tagSet(v.tags)}`,
          // The tag set ends the key, after its last NUL (tagSet leaves none): computed once, not again here.
          (v, key): RolledUpVerifications => ({
            first: v,
            count: 1,
            tags: key.slice(key.lastIndexOf("\0") + 1),
            spentCredits: v.spentCredits,
          }),
          (group, v) => {
            group.spentCredits += v.spentCredits;
          },
        ),
      ),
    ];
    // Tags travel as one array literal per row, cast server-side (unnest would flatten a text[][]).
    const stored = await this.write(
      "verifications",
      batchId,
      parts,
      (sql, chunk, claim) => sql`
          ${claim.head}
          INSERT INTO analytics_key_verifications_per_ms (time, workspace_id, api_id, key_id, identity_id,
            external_id, outcome, tags, count, spent_credits)
          SELECT r.time, r.workspace_id, r.api_id, r.key_id, r.identity_id, r.external_id, r.outcome,
            r.tags::text[], r.count, r.spent_credits
          FROM unnest(
            ${chunk.map((r) => String(r.first.time))}::bigint[],
            ${chunk.map((r) => r.first.workspaceId)}::text[],
            ${chunk.map((r) => r.first.apiId)}::text[],
            ${chunk.map((r) => r.first.keyId)}::text[],
            ${chunk.map((r) => r.first.identityId)}::text[],
            ${chunk.map((r) => r.first.externalId)}::text[],
            ${chunk.map((r) => r.first.outcome)}::text[],
            ${chunk.map((r) => r.tags)}::text[],
            ${chunk.map((r) => String(r.count))}::bigint[],
            ${chunk.map((r) => String(r.spentCredits))}::bigint[]
          ) AS r(time, workspace_id, api_id, key_id, identity_id, external_id, outcome, tags, count,
            spent_credits)
          ${claim.tail}`,
    );
    return stored ? events.length : 0;
  }

  async insertRatelimits(rows: readonly RatelimitCheck[], batchId?: string): Promise<number> {
    const checks = uniqueByRequestId(rows);
    if (checks.length === 0) return 0;
    const parts = [
      ...chunks(
        rollUp(
          checks,
          (c) =>
            `${c.time}\0${c.workspaceId}\0${c.namespaceId}\0${storable(c.identifier)}\0${c.passed}\0${c.overrideId}`,
          (c): RolledUpChecks => {
            const n = c.count ?? 1;
            return { first: c, count: n, cost: c.cost * n, latencySum: c.latency * n, latencyMax: c.latency };
          },
          (group, c) => {
            // rollUp counted the row once; a row standing for n identical checks counts n.
            const n = c.count ?? 1;
            group.count += n - 1;
            group.cost += c.cost * n;
            group.latencySum += c.latency * n;
            group.latencyMax = Math.max(group.latencyMax, c.latency);
          },
        ),
      ),
    ];
    // `passed` travels as a typed boolean array: postgres.js writes an element of a boolean[] parameter
    // as true only when it is the boolean true (version 1 sent the string "true" and stored false), and
    // types a plain array of booleans as one boolean, which the cast refuses.
    const stored = await this.write(
      "ratelimits",
      batchId,
      parts,
      (sql, chunk, claim) => sql`
          ${claim.head}
          INSERT INTO analytics_ratelimits_per_ms (time, workspace_id, namespace_id, identifier, passed,
            override_id, count, cost, latency_sum, latency_max)
          SELECT * FROM unnest(
            ${chunk.map((r) => String(r.first.time))}::bigint[],
            ${chunk.map((r) => r.first.workspaceId)}::text[],
            ${chunk.map((r) => r.first.namespaceId)}::text[],
            ${chunk.map((r) => storable(r.first.identifier))}::text[],
            ${sql.array(
              chunk.map((r) => r.first.passed),
              BOOL_OID,
            )}::boolean[],
            ${chunk.map((r) => r.first.overrideId)}::text[],
            ${chunk.map((r) => String(r.count))}::bigint[],
            ${chunk.map((r) => String(r.cost))}::bigint[],
            ${chunk.map((r) => String(r.latencySum))}::float8[],
            ${chunk.map((r) => String(r.latencyMax))}::float8[]
          )
          ${claim.tail}`,
    );
    return stored ? checks.length : 0;
  }

  /** Sums the rolled-up rows in [start, end): exact, as each row keeps its verifications' ms. */
  /**
   * With `options`, the query runs in a transaction with statement_timeout
   * (PostgreSQL cancels it at the limit; PGlite ignores the setting, and the
   * caller's timer answers instead) and reads at most one row past
   * structuredMaxRows, so a longer answer is refused without being held.
   */
  async verifications(q: VerificationQuery, options?: QueryOptions): Promise<VerificationCount[]> {
    if (q.apiIds?.length === 0 || q.end <= q.start) return [];
    const max = options?.limits.structuredMaxRows;
    const select = (sql: Db) =>
      sql<
        {
          bucket: number | string;
          grp: string;
          ext: string;
          outcome: string;
          n: number | string;
          credits: number | string;
        }[]
      >`
      SELECT ${this.bucket(q.granularity)} AS bucket, ${this.group(q.groupBy)} AS grp,
        ${q.groupBy === "identity" ? sql`external_id` : sql`''::text`} AS ext, outcome,
        sum(count)::bigint AS n, sum(spent_credits)::bigint AS credits
      FROM analytics_key_verifications_per_ms
        ${q.groupBy === "tag" ? sql`CROSS JOIN LATERAL unnest(tags) AS t(tag)` : sql``}
      WHERE workspace_id = ${q.workspaceId} AND time >= ${q.start} AND time < ${q.end}
        ${q.apiIds ? sql`AND api_id = ANY(${q.apiIds}::text[])` : sql``}
        ${q.keyId !== undefined ? sql`AND key_id = ${q.keyId}` : sql``}
        ${q.identity !== undefined ? sql`AND (identity_id = ${q.identity} OR external_id = ${q.identity})` : sql``}
        ${q.tags.length > 0 ? sql`AND tags @> ${q.tags}::text[]` : sql``}
      GROUP BY 1, 2, 3, 4
      ${max === undefined ? sql`` : sql`LIMIT ${max + 1}`}`;
    const rows = await this.bounded(select, options, max);
    return rows.map((r) => ({
      time: Number(r.bucket),
      group: r.grp,
      externalId: r.ext,
      outcome: r.outcome,
      count: Number(r.n),
      spentCredits: Number(r.credits),
    }));
  }

  async ratelimits(q: RatelimitQuery, options?: QueryOptions): Promise<RatelimitCount[]> {
    if (q.namespaceIds?.length === 0 || q.end <= q.start) return [];
    const max = options?.limits.structuredMaxRows;
    const select = (sql: Db) =>
      sql<{ bucket: number | string; ns: string; ident: string; passed: boolean; n: number | string }[]>`
      SELECT ${this.bucket(q.granularity)} AS bucket,
        ${q.groupBy === "none" ? sql`''::text` : sql`namespace_id`} AS ns,
        ${q.groupBy === "identifier" ? sql`identifier` : sql`''::text`} AS ident,
        passed, sum(count)::bigint AS n
      FROM analytics_ratelimits_per_ms
      WHERE workspace_id = ${q.workspaceId} AND time >= ${q.start} AND time < ${q.end}
        ${q.namespaceIds ? sql`AND namespace_id = ANY(${q.namespaceIds}::text[])` : sql``}
        ${q.identifier !== undefined ? sql`AND identifier = ${q.identifier}` : sql``}
      GROUP BY 1, 2, 3, 4
      ${max === undefined ? sql`` : sql`LIMIT ${max + 1}`}`;
    const rows = await this.bounded(select, options, max);
    return rows.map((r) => ({
      time: Number(r.bucket),
      namespaceId: r.ns,
      identifier: r.ident,
      passed: r.passed,
      count: Number(r.n),
    }));
  }

  /** Runs a structured query under the statement timeout and the row cap of `options`. */
  private async bounded<T>(
    select: (sql: Db) => PromiseLike<T[]>,
    options: QueryOptions | undefined,
    max: number | undefined,
  ): Promise<T[]> {
    if (options === undefined) return await select(this.sql);
    let rows: T[];
    try {
      rows = (await this.sql.begin(async (tx) => {
        await tx`SELECT set_config('statement_timeout', ${String(options.limits.timeoutMs)}, true)`;
        return select(tx);
      })) as T[];
    } catch (err) {
      // 57014: query_canceled, which statement_timeout raises.
      if ((err as { code?: string }).code === "57014") throw new QueryLimitError("time");
      throw err;
    }
    if (max !== undefined && rows.length > max) throw new QueryLimitError("rows");
    return rows;
  }

  /**
   * Inserts every part (with `insert`), and the batch id with them, all or
   * nothing; answers false, having inserted nothing, when the id is stored
   * already. One part, the common case, is one statement: the id's INSERT is a
   * CTE that the rows' INSERT reads (a transaction would cost three more round
   * trips per batch); more parts are one transaction. The id is kept per kind,
   * so one batch's verifications and checks may share it. Ids older than
   * BATCH_IDS_KEPT_MS are deleted once every PRUNE_EVERY_MS.
   */
  private async write<T>(
    kind: "verifications" | "ratelimits",
    batchId: string | undefined,
    [first, ...rest]: T[][],
    insert: (sql: Db, part: T[], claim: Claim) => PromiseLike<{ count: number }>,
  ): Promise<boolean> {
    if (!first) return false;
    const id = batchId === undefined ? undefined : `${kind}:${batchId}`;
    const now = Date.now();
    // The first part claims the id; a part inserts at least one row, so 0 rows means the id was there.
    const stored =
      rest.length === 0
        ? (await insert(this.sql, first, claim(this.sql, id, now))).count > 0
        : await this.sql.begin(async (tx) => {
            if ((await insert(tx, first, claim(tx, id, now))).count === 0) return false;
            for (const part of rest) await insert(tx, part, claim(tx, undefined, now));
            return true;
          });
    if (stored && id !== undefined && now - this.prunedAt >= PRUNE_EVERY_MS) {
      this.prunedAt = now;
      await this.sql`DELETE FROM analytics_batches WHERE at < ${now - BATCH_IDS_KEPT_MS}`;
    }
    return stored;
  }

  async ping(): Promise<boolean> {
    try {
      await this.sql`SELECT 1`;
      return true;
    } catch {
      return false;
    }
  }

  /** The bucket's first ms, in UTC whatever the session's time zone (times are non-negative). */
  private bucket(granularity: Granularity) {
    const sql = this.sql;
    switch (granularity) {
      case "hour":
        return sql`(time / 3600000) * 3600000`;
      case "day":
        return sql`(time / 86400000) * 86400000`;
      case "month":
        return sql`(extract(epoch FROM date_trunc('month', to_timestamp(time / 1000) AT TIME ZONE 'UTC')) * 1000)::bigint`;
      default: {
        const never: never = granularity;
        throw new Error(`unknown granularity ${never}`);
      }
    }
  }

  /** What a row counts under; grouped by tag, once per (distinct, as stored) tag through the lateral unnest. */
  private group(groupBy: Grouping) {
    const sql = this.sql;
    switch (groupBy) {
      case "none":
        return sql`''::text`;
      case "key":
        return sql`key_id`;
      case "identity":
        return sql`identity_id`;
      case "tag":
        return sql`t.tag`;
      case "outcome":
        return sql`outcome`;
      default: {
        const never: never = groupBy;
        throw new Error(`unknown grouping ${never}`);
      }
    }
  }
}

/** The first row of each request id, in order: a repeat within one call would otherwise count in its rolled-up row twice. */
function uniqueByRequestId<T extends { requestId: string }>(rows: readonly T[]): T[] {
  const byId = new Map<string, T>();
  for (const row of rows) if (!byId.has(row.requestId)) byId.set(row.requestId, row);
  return [...byId.values()];
}

/**
 * What makes an INSERT ... SELECT insert its rows only if it also inserts the
 * batch id: `head` a CTE inserting the id (skipped when there), `tail` a WHERE
 * on that CTE's answer. Both empty without an id.
 */
function claim(sql: Db, id: string | undefined, at: number) {
  if (id === undefined) return { head: sql``, tail: sql`` };
  return {
    head: sql`WITH batch AS (
      INSERT INTO analytics_batches (id, at) VALUES (${id}, ${at}) ON CONFLICT (id) DO NOTHING RETURNING 1)`,
    tail: sql`WHERE EXISTS (SELECT 1 FROM batch)`,
  };
}
type Claim = ReturnType<typeof claim>;

/** Events of one write that share their ms and every attribute, counted. */
interface RolledUp<T> {
  /** The first of them: its attributes are all of theirs. */
  first: T;
  count: number;
}

interface RolledUpVerifications extends RolledUp<Verification> {
  /** Their tag set as a PostgreSQL array literal, sorted, without repeats. */
  tags: string;
  spentCredits: number;
}

interface RolledUpChecks extends RolledUp<RatelimitCheck> {
  cost: number;
  latencySum: number;
  latencyMax: number;
}

/**
 * The rows of one write rolled up: one group per `key` (the row's ms and every
 * attribute it is stored by, NUL-separated: PostgreSQL text cannot hold one,
 * so no field value can fake a boundary), made by `open` from its first row
 * (and that key), which counts 1; each later row of the group counts 1 more
 * and `add` sums the rest.
 */
function rollUp<T, G extends RolledUp<T>>(
  rows: readonly T[],
  key: (row: T) => string,
  open: (first: T, key: string) => G,
  add: (group: G, row: T) => void,
): G[] {
  const groups = new Map<string, G>();
  for (const row of rows) {
    const id = key(row);
    const group = groups.get(id);
    if (group) {
      group.count++;
      add(group, row);
    } else groups.set(id, open(row, id));
  }
  return [...groups.values()];
}

/**
 * Tags as a text[] literal: sorted and distinct, so the same set is the same
 * row whatever the order it came in; each element quoted, with NUL (which
 * PostgreSQL text refuses, and would fail the whole batch) left out.
 */
export function tagSet(tags: readonly string[]): string {
  if (tags.length === 0) return "{}";
  const distinct = [...new Set(tags.map((t) => t.replaceAll("\0", "")))].sort();
  return `{${distinct.map((t) => `"${t.replace(/[\\"]/g, "\\$&")}"`).join(",")}}`;
}

/**
 * The identifier as PostgreSQL text can hold it, without U+0000: the gateway
 * refuses bodies carrying one, but a check that reached the buffer some other
 * way must not make its whole batch fail, and be retried, forever.
 */
function storable(identifier: string): string {
  return identifier.includes("\0") ? identifier.replaceAll("\0", "") : identifier;
}

function* chunks<T>(rows: readonly T[]): Generator<T[]> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) yield rows.slice(i, i + INSERT_CHUNK);
}
