import type { Sql } from "@latchkey/runtime";
import type {
  AnalyticsStore,
  Granularity,
  Grouping,
  RatelimitCheck,
  Verification,
  VerificationCount,
  VerificationQuery,
} from "./analytics-store.ts";

/** Rows per INSERT: a buffer's batch is one statement; a caller's huge array is a few, each a bounded message. */
const INSERT_CHUNK = 10_000;

/**
 * Analytics in PostgreSQL (tables in migrations.ts, analyticsPostgresMigrations):
 * the all-in-one process without ClickHouse keeps them in its own database,
 * PGlite by default, so they survive a restart like the keys do. Each insert
 * is one statement however many rows it carries (arrays unnested server-side);
 * the request id is the primary key, so a repeated event is skipped by
 * ON CONFLICT DO NOTHING and the answer counts only the new rows. Queries
 * aggregate the raw rows over the workspace's time range; there are no
 * rollups, which suits the volumes of one process.
 */
export class PostgresAnalyticsStore implements AnalyticsStore {
  constructor(private readonly sql: Sql) {}

  async insertVerifications(rows: readonly Verification[]): Promise<number> {
    let added = 0;
    for (const chunk of chunks(uniqueByRequestId(rows))) {
      // Tags travel as one JSON array per row: unnest would flatten a two-dimensional text[].
      const result = await this.sql`
        INSERT INTO analytics_key_verifications (request_id, time, workspace_id, api_id, key_id, identity_id,
          external_id, outcome, tags, spent_credits, latency)
        SELECT r.request_id, r.time, r.workspace_id, r.api_id, r.key_id, r.identity_id, r.external_id, r.outcome,
          ARRAY(SELECT jsonb_array_elements_text(r.tags::jsonb)), r.spent_credits, r.latency
        FROM unnest(
          ${chunk.map((v) => v.requestId)}::text[],
          ${chunk.map((v) => String(v.time))}::bigint[],
          ${chunk.map((v) => v.workspaceId)}::text[],
          ${chunk.map((v) => v.apiId)}::text[],
          ${chunk.map((v) => v.keyId)}::text[],
          ${chunk.map((v) => v.identityId)}::text[],
          ${chunk.map((v) => v.externalId)}::text[],
          ${chunk.map((v) => v.outcome)}::text[],
          ${chunk.map((v) => JSON.stringify([...new Set(v.tags)]))}::text[],
          ${chunk.map((v) => String(v.spentCredits))}::bigint[],
          ${chunk.map((v) => String(v.latency))}::float8[]
        ) AS r(request_id, time, workspace_id, api_id, key_id, identity_id, external_id, outcome, tags,
          spent_credits, latency)
        ON CONFLICT (request_id) DO NOTHING`;
      added += result.count;
    }
    return added;
  }

  async insertRatelimits(rows: readonly RatelimitCheck[]): Promise<number> {
    let added = 0;
    for (const chunk of chunks(uniqueByRequestId(rows))) {
      const result = await this.sql`
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
        ON CONFLICT (request_id) DO NOTHING`;
      added += result.count;
    }
    return added;
  }

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
        count(*)::bigint AS n, sum(spent_credits)::bigint AS credits
      FROM analytics_key_verifications
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

function* chunks<T>(rows: readonly T[]): Generator<T[]> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) yield rows.slice(i, i + INSERT_CHUNK);
}
