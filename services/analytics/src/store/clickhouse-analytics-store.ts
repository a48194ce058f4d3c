import type { ClickHouseClient } from "@clickhouse/client";
import type { Logger } from "@latchkey/runtime";
import { int, type QueryRunner, quote, quoteList } from "../clickhouse.ts";
import { failureOf } from "../query-errors.ts";
import {
  QUERY_MAX_THREADS,
  querySettings,
  readServerProfile,
  type ServerProfile,
} from "../query-settings.ts";
import {
  type AnalyticsStore,
  type CheckedRawQuery,
  DAY,
  DEFAULT_QUERY_LIMITS,
  type Granularity,
  HOUR,
  QueryLimitError,
  type QueryOptions,
  type RatelimitCheck,
  type RatelimitCount,
  type RatelimitQuery,
  type Verification,
  type VerificationCount,
  type VerificationQuery,
} from "./analytics-store.ts";

/** Request ids per dedupe query: keeps each query well under the server's limits. */
const DEDUPE_CHUNK = 5_000;

type Source = "raw" | "hour" | "day";

interface Segment {
  source: Source;
  from: number;
  to: number;
}

/**
 * Analytics in ClickHouse (tables in migrations.ts). Long ranges read the
 * daily and hourly rollups for the whole days and hours inside them and the
 * raw table only for the ragged edges.
 */
export class ClickHouseAnalyticsStore implements AnalyticsStore {
  /** The raw queries' server, read at their first use (and again after a failed read). */
  private profile: Promise<ServerProfile> | undefined;

  /**
   * `ch` ingests, migrates and answers structured queries; `runner` runs raw
   * ones (the read-only query user, or `ch` itself with readonly=2 and the
   * limits sent as settings).
   */
  constructor(
    private readonly ch: ClickHouseClient,
    private readonly runner: QueryRunner = { client: ch, mode: "fallback" },
    /** Where a query user whose profile lacks an isolation setting is reported, once. */
    private readonly log?: Logger,
  ) {}

  async insertVerifications(rows: readonly Verification[]): Promise<number> {
    const fresh = await this.unseen("key_verifications_raw", rows);
    if (fresh.length === 0) return 0;
    await this.ch.insert({
      table: "key_verifications_raw",
      format: "JSONEachRow",
      values: fresh.map((v) => ({
        request_id: v.requestId,
        time: v.time,
        workspace_id: v.workspaceId,
        api_id: v.apiId,
        key_id: v.keyId,
        identity_id: v.identityId,
        external_id: v.externalId,
        outcome: v.outcome,
        tags: [...new Set(v.tags)],
        spent_credits: v.spentCredits,
        latency: v.latency,
      })),
    });
    return fresh.length;
  }

  async insertRatelimits(rows: readonly RatelimitCheck[]): Promise<number> {
    const fresh = await this.unseen("ratelimits_raw", rows.flatMap(checksOf));
    if (fresh.length === 0) return 0;
    await this.ch.insert({
      table: "ratelimits_raw",
      format: "JSONEachRow",
      values: fresh.map((r) => ({
        request_id: r.requestId,
        time: r.time,
        workspace_id: r.workspaceId,
        namespace_id: r.namespaceId,
        identifier: r.identifier,
        passed: r.passed ? 1 : 0,
        limit: r.limit,
        remaining: r.remaining,
        reset_at: r.reset,
        cost: r.cost,
        override_id: r.overrideId,
        latency: r.latency,
      })),
    });
    return fresh.length;
  }

  /**
   * The rows whose request id is neither repeated earlier in the batch nor
   * stored already. Redelivered events are dropped here, before the insert,
   * so the rollups the materialized views feed never count them twice. The
   * lookup is cheap: the table is ordered by (workspace_id, time, request_id)
   * and a batch spans a narrow time range.
   */
  private async unseen<T extends { requestId: string; time: number; workspaceId: string }>(
    table: string,
    rows: readonly T[],
  ): Promise<T[]> {
    const byId = new Map<string, T>();
    for (const row of rows) if (!byId.has(row.requestId)) byId.set(row.requestId, row);
    const unique = [...byId.values()];
    const stored = new Set<string>();
    for (let i = 0; i < unique.length; i += DEDUPE_CHUNK) {
      const chunk = unique.slice(i, i + DEDUPE_CHUNK);
      let min = Number.POSITIVE_INFINITY;
      let max = Number.NEGATIVE_INFINITY;
      for (const r of chunk) {
        min = Math.min(min, r.time);
        max = Math.max(max, r.time);
      }
      const workspaces = [...new Set(chunk.map((r) => r.workspaceId))];
      const rs = await this.ch.query({
        query: `SELECT request_id FROM ${table}
WHERE workspace_id IN ${tuple(workspaces)} AND time >= ${int(min)} AND time <= ${int(max)}
  AND request_id IN ${tuple(chunk.map((r) => r.requestId))}`,
        format: "JSONEachRow",
      });
      for (const r of await rs.json<{ request_id: string }>()) stored.add(r.request_id);
    }
    return unique.filter((r) => !stored.has(r.requestId));
  }

  async verifications(q: VerificationQuery, options?: QueryOptions): Promise<VerificationCount[]> {
    if (q.apiIds?.length === 0 || q.end <= q.start) return [];
    const parts = await Promise.all(
      segments(q.start, q.end, q.granularity).map((s) =>
        this.countSegment(q, s, options).catch((err: unknown) => {
          throw limitOf(err) ?? err;
        }),
      ),
    );
    // A bucket split between the raw table and a rollup comes back in pieces: add them up.
    const merged = new Map<string, VerificationCount>();
    for (const rows of parts) {
      for (const r of rows) {
        const id = `${r.time}\u0000${r.group}\u0000${r.externalId}\u0000${r.outcome}`;
        const m = merged.get(id);
        if (m) {
          m.count += r.count;
          m.spentCredits += r.spentCredits;
        } else merged.set(id, { ...r });
      }
    }
    if (options && merged.size > options.limits.structuredMaxRows) throw new QueryLimitError("rows");
    return [...merged.values()];
  }

  private async countSegment(
    q: VerificationQuery,
    s: Segment,
    options: QueryOptions | undefined,
  ): Promise<VerificationCount[]> {
    const table = s.source === "raw" ? "key_verifications_raw" : `key_verifications_per_${s.source}`;
    const where = [
      `workspace_id = ${quote(q.workspaceId)}`,
      `time >= ${int(s.from)}`,
      `time < ${int(s.to)}`,
      ...(q.apiIds ? [`api_id IN ${tuple(q.apiIds)}`] : []),
      ...(q.keyId !== undefined ? [`key_id = ${quote(q.keyId)}`] : []),
      ...(q.identity !== undefined
        ? [`(identity_id = ${quote(q.identity)} OR external_id = ${quote(q.identity)})`]
        : []),
      ...(q.tags.length > 0 ? [`hasAll(tags, ${quoteList(q.tags)})`] : []),
    ];
    const group = {
      none: "''",
      key: "key_id",
      identity: "identity_id",
      tag: "arrayJoin(tags)",
      outcome: "outcome",
    }[q.groupBy];
    const externalId = q.groupBy === "identity" ? "external_id" : "''";
    const rs = await this.ch.query({
      query: `SELECT ${bucketSql(q.granularity)} AS bucket, ${group} AS grp, ${externalId} AS ext, outcome,
  ${s.source === "raw" ? "count()" : "sum(count)"} AS n, sum(spent_credits) AS credits
FROM ${table}
WHERE ${where.join("\n  AND ")}
GROUP BY bucket, grp, ext, outcome`,
      format: "JSONEachRow",
      ...(options && {
        abort_signal: options.signal,
        clickhouse_settings: {
          max_execution_time: Math.ceil(options.limits.timeoutMs / 1000),
          max_result_rows: String(options.limits.structuredMaxRows + 1),
          result_overflow_mode: "throw",
          max_threads: QUERY_MAX_THREADS,
        },
      }),
    });
    const rows = await rs.json<{
      bucket: number;
      grp: string;
      ext: string;
      outcome: string;
      n: number;
      credits: number;
    }>();
    return rows.map((r) => ({
      time: q.granularity === "month" ? monthStart(Number(r.bucket)) : Number(r.bucket),
      group: r.grp,
      externalId: r.ext,
      outcome: r.outcome,
      count: Number(r.n),
      spentCredits: Number(r.credits),
    }));
  }

  async ratelimits(q: RatelimitQuery, options?: QueryOptions): Promise<RatelimitCount[]> {
    if (q.namespaceIds?.length === 0 || q.end <= q.start) return [];
    const parts = await Promise.all(
      segments(q.start, q.end, q.granularity).map((s) =>
        this.countRatelimitSegment(q, s, options).catch((err: unknown) => {
          throw limitOf(err) ?? err;
        }),
      ),
    );
    // A bucket split between the raw table and a rollup comes back in pieces: add them up.
    const merged = new Map<string, RatelimitCount>();
    for (const rows of parts) {
      for (const r of rows) {
        const id = `${r.time}\u0000${r.namespaceId}\u0000${r.identifier}\u0000${r.passed}`;
        const m = merged.get(id);
        if (m) m.count += r.count;
        else merged.set(id, { ...r });
      }
    }
    if (options && merged.size > options.limits.structuredMaxRows) throw new QueryLimitError("rows");
    return [...merged.values()];
  }

  private async countRatelimitSegment(
    q: RatelimitQuery,
    s: Segment,
    options: QueryOptions | undefined,
  ): Promise<RatelimitCount[]> {
    const table = s.source === "raw" ? "ratelimits_raw" : `ratelimits_per_${s.source}`;
    const where = [
      `workspace_id = ${quote(q.workspaceId)}`,
      `time >= ${int(s.from)}`,
      `time < ${int(s.to)}`,
      ...(q.namespaceIds ? [`namespace_id IN ${tuple(q.namespaceIds)}`] : []),
      ...(q.identifier !== undefined ? [`identifier = ${quote(q.identifier)}`] : []),
    ];
    const ns = q.groupBy === "none" ? "''" : "namespace_id";
    const id = q.groupBy === "identifier" ? "identifier" : "''";
    const rs = await this.ch.query({
      query: `SELECT ${bucketSql(q.granularity)} AS bucket, ${ns} AS ns, ${id} AS ident, passed AS ok,
  ${s.source === "raw" ? "count()" : "sum(count)"} AS n
FROM ${table}
WHERE ${where.join("\n  AND ")}
GROUP BY bucket, ns, ident, ok`,
      format: "JSONEachRow",
      ...(options && {
        abort_signal: options.signal,
        clickhouse_settings: {
          max_execution_time: Math.ceil(options.limits.timeoutMs / 1000),
          max_result_rows: String(options.limits.structuredMaxRows + 1),
          result_overflow_mode: "throw",
          max_threads: QUERY_MAX_THREADS,
        },
      }),
    });
    const rows = await rs.json<{ bucket: number; ns: string; ident: string; ok: number; n: number }>();
    return rows.map((r) => ({
      time: q.granularity === "month" ? monthStart(Number(r.bucket)) : Number(r.bucket),
      namespaceId: r.ns,
      identifier: r.ident,
      passed: Number(r.ok) === 1,
      count: Number(r.n),
    }));
  }

  /**
   * Runs a checked raw query. Every error becomes a QueryLimitError or a
   * QueryFailedError naming its class: ClickHouse's text goes no further than
   * the error's `clickhouse` field, which getVerifications logs at debug.
   */
  async rawQuery(query: CheckedRawQuery, options: QueryOptions): Promise<Record<string, unknown>[]> {
    try {
      return await this.runRaw(query, options);
    } catch (err) {
      throw failureOf(err);
    }
  }

  private serverProfile(): Promise<ServerProfile> {
    this.profile ??= readServerProfile(this.runner.client).then(
      (profile) => {
        const { unpinned } = querySettings(profile, this.runner.mode, DEFAULT_QUERY_LIMITS, 0);
        if (unpinned.length > 0) {
          // Raw queries still run: raw-query.ts's BARRIER keeps tenants' expressions on their own rows.
          this.log?.error(
            { version: profile.version, unpinned },
            "the ClickHouse query user's profile does not pin these settings, and readonly=1 keeps them from being sent with each query: add them to it (scripts/clickhouse-users.sh, docs/analytics-queries.md)",
          );
        }
        return profile;
      },
      (err: unknown) => {
        this.profile = undefined;
        throw err;
      },
    );
    return this.profile;
  }

  /**
   * Streams the answer, counting rows and bytes, and stops reading (closing
   * the request, which cancels the query) as soon as either passes its limit.
   * The server holds the answer until the query ends (wait_end_of_query), so
   * an error in the middle comes back as an error status, not after rows.
   */
  private async runRaw(
    query: CheckedRawQuery,
    { limits, signal }: QueryOptions,
  ): Promise<Record<string, unknown>[]> {
    const maxRows = Math.min(query.maxRows, limits.maxRows);
    const profile = await this.serverProfile();
    const rs = await this.runner.client.query({
      query: query.sql,
      format: "JSONEachRow",
      abort_signal: signal,
      clickhouse_settings: querySettings(profile, this.runner.mode, limits, maxRows).settings,
    });
    const rows: Record<string, unknown>[] = [];
    let bytes = 0;
    const stream = rs.stream<Record<string, unknown>>();
    try {
      for await (const batch of stream) {
        for (const row of batch) {
          bytes += row.text.length + 1;
          if (rows.length >= maxRows) throw new QueryLimitError("rows");
          if (bytes > limits.maxBytes) throw new QueryLimitError("bytes");
          // A server that writes an error into the output format ends the rows with {"exception": "Code: N. ..."}.
          if (row.text.startsWith('{"exception":')) {
            const { exception, ...rest } = row.json() as { exception?: unknown };
            if (
              Object.keys(rest).length === 0 &&
              typeof exception === "string" &&
              /^Code: \d+/.test(exception)
            ) {
              throw failureOf(new Error(exception));
            }
          }
          rows.push(row.json());
        }
      }
    } finally {
      stream.destroy();
    }
    return rows;
  }

  async ping(): Promise<boolean> {
    return (await this.ch.ping()).success;
  }
}

/**
 * The checks a row stands for, one row each as ratelimits_raw keeps them: a
 * row of n identical checks (RatelimitCheck.count) becomes n, ids derived from
 * its own (so a redelivery is dropped as any other), `remaining` what each had
 * left in the order they were counted (a refused one left what the last did).
 */
function checksOf(row: RatelimitCheck): RatelimitCheck[] {
  const n = row.count ?? 1;
  if (n <= 1) return [row];
  const out: RatelimitCheck[] = new Array(n);
  for (let k = 0; k < n; k++) {
    out[k] = {
      ...row,
      requestId: k === 0 ? row.requestId : `${row.requestId}/${k}`,
      remaining: row.passed ? row.remaining + (n - 1 - k) * row.cost : row.remaining,
      count: 1,
    };
  }
  return out;
}

/** A structured query's limit error, if ClickHouse's error is one. */
function limitOf(err: unknown): QueryLimitError | undefined {
  const failure = failureOf(err);
  return failure instanceof QueryLimitError ? failure : undefined;
}

/** A ClickHouse tuple of strings for IN. */
const tuple = (values: readonly string[]) => `(${values.map(quote).join(", ")})`;

function bucketSql(granularity: Granularity): string {
  switch (granularity) {
    case "hour":
      return `intDiv(time, ${HOUR}) * ${HOUR}`;
    case "day":
      return `intDiv(time, ${DAY}) * ${DAY}`;
    case "month":
      // YYYYMM, turned into the month's first ms in monthStart: no time zone is involved.
      return "toYYYYMM(toDateTime(intDiv(time, 1000), 'UTC'))";
    default: {
      const never: never = granularity;
      throw new Error(`unknown granularity ${never}`);
    }
  }
}

const monthStart = (yyyymm: number) => Date.UTC(Math.floor(yyyymm / 100), (yyyymm % 100) - 1, 1);

/**
 * Splits [start, end) into the coarsest pieces the requested granularity
 * allows: whole days from the daily rollup (day and month granularity),
 * whole hours from the hourly rollup, the ragged edges from the raw table.
 */
export function segments(start: number, end: number, granularity: Granularity): Segment[] {
  const levels: { source: Source; size: number }[] =
    granularity === "hour"
      ? [{ source: "hour", size: HOUR }]
      : [
          { source: "hour", size: HOUR },
          { source: "day", size: DAY },
        ];
  const split = (from: number, to: number, level: number): Segment[] => {
    if (from >= to) return [];
    const l = levels[level];
    if (!l) return [{ source: "raw", from, to }];
    const lo = Math.ceil(from / l.size) * l.size;
    const hi = Math.floor(to / l.size) * l.size;
    if (lo >= hi) return split(from, to, level - 1);
    return [
      ...split(from, lo, level - 1),
      { source: l.source, from: lo, to: hi },
      ...split(hi, to, level - 1),
    ];
  };
  return split(start, end, levels.length - 1);
}
