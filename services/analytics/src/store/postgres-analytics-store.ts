import type { Sql, TransactionSql } from "@latchkey/runtime";
import type {
  AnalyticsStore,
  Granularity,
  Grouping,
  RatelimitCheck,
  Verification,
  VerificationCount,
  VerificationQuery,
} from "./analytics-store.ts";

/** The pool, or the transaction of a write in several parts. */
type Db = Sql | TransactionSql;

/** Rows per INSERT: a buffer's batch is one statement; a caller's huge array is a few, each a bounded message. */
const INSERT_CHUNK = 10_000;
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
    const parts = [...chunks(rollUp(events))];
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
    const stored = await this.write(
      "ratelimits",
      batchId,
      [...chunks(checks)],
      (sql, chunk, claim) => sql`
          ${claim.head}
          INSERT INTO analytics_ratelimits (request_id, time, workspace_id, namespace_id, identifier, passed,
            "limit", remaining, reset_at, cost, override_id, latency)
          SELECT * FROM unnest(
            ${chunk.map((r) => r.requestId)}::text[],
            ${chunk.map((r) => String(r.time))}::bigint[],
            ${chunk.map((r) => r.workspaceId)}::text[],
            ${chunk.map((r) => r.namespaceId)}::text[],
            ${chunk.map((r) => r.identifier)}::text[],
            ${chunk.map((r) => String(r.passed))}::boolean[],
            ${chunk.map((r) => String(r.limit))}::bigint[],
            ${chunk.map((r) => String(r.remaining))}::bigint[],
            ${chunk.map((r) => String(r.reset))}::bigint[],
            ${chunk.map((r) => String(r.cost))}::bigint[],
            ${chunk.map((r) => r.overrideId)}::text[],
            ${chunk.map((r) => String(r.latency))}::float8[]
          )
          ${claim.tail}`,
    );
    return stored ? checks.length : 0;
  }

  /** Sums the rolled-up rows in [start, end): exact, as each row keeps its verifications' ms. */
  async verifications(q: VerificationQuery): Promise<VerificationCount[]> {
    if (q.apiIds?.length === 0 || q.end <= q.start) return [];
    const sql = this.sql;
    const rows = await sql<
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
      GROUP BY 1, 2, 3, 4`;
    return rows.map((r) => ({
      time: Number(r.bucket),
      group: r.grp,
      externalId: r.ext,
      outcome: r.outcome,
      count: Number(r.n),
      spentCredits: Number(r.credits),
    }));
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

/** The first row of each request id, in order: repeats within a batch do not travel (the conflict clause would skip them). */
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

/** The verifications of one write that share every attribute and their ms, counted. */
interface RolledUp {
  /** The first of them: its attributes are all of theirs. */
  first: Verification;
  /** Their tag set as a PostgreSQL array literal, sorted, without repeats. */
  tags: string;
  count: number;
  spentCredits: number;
}

function rollUp(rows: readonly Verification[]): RolledUp[] {
  const byAttributes = new Map<string, RolledUp>();
  for (const v of rows) {
    const tags = tagSet(v.tags);
    // NUL separates the fields: PostgreSQL text cannot hold one, so no field value can fake a boundary.
    const id = `${v.time}\0${v.workspaceId}\0${v.apiId}\0${v.keyId}\0${v.identityId}\0${v.externalId}\0${v.outcome}\0${tags}`;
    const row = byAttributes.get(id);
    if (row) {
      row.count++;
      row.spentCredits += v.spentCredits;
    } else byAttributes.set(id, { first: v, tags, count: 1, spentCredits: v.spentCredits });
  }
  return [...byAttributes.values()];
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

function* chunks<T>(rows: readonly T[]): Generator<T[]> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) yield rows.slice(i, i + INSERT_CHUNK);
}
