import type { ClickHouseClient } from "@clickhouse/client";
import type { Migration } from "@latchkey/runtime";

export interface ClickHouseMigration {
  /** Increasing version; append new ones, never edit an applied one. */
  version: number;
  name: string;
  /** One statement each (the HTTP interface runs one per request); each idempotent, so racing replicas are harmless. */
  statements: string[];
}

const monthPartition = "PARTITION BY toYYYYMM(toDateTime(intDiv(time, 1000), 'UTC'))";

/** A verification rollup kept by a materialized view: one row per bucket and dimensions, summed on merge. */
const verificationRollup = (name: string, bucketMs: number): string[] => [
  `CREATE TABLE IF NOT EXISTS key_verifications_per_${name} (
  time Int64,
  workspace_id String,
  api_id String,
  key_id String,
  identity_id String,
  external_id String,
  outcome String,
  tags Array(String),
  count UInt64,
  spent_credits Int64
) ENGINE = SummingMergeTree((count, spent_credits))
${monthPartition}
ORDER BY (workspace_id, time, api_id, key_id, identity_id, external_id, outcome, tags)`,
  `CREATE MATERIALIZED VIEW IF NOT EXISTS key_verifications_per_${name}_mv TO key_verifications_per_${name} AS
SELECT
  intDiv(time, ${bucketMs}) * ${bucketMs} AS time,
  workspace_id, api_id, key_id, identity_id, external_id, outcome,
  arraySort(tags) AS tags,
  count() AS count,
  sum(spent_credits) AS spent_credits
FROM key_verifications_raw
GROUP BY time, workspace_id, api_id, key_id, identity_id, external_id, outcome, tags`,
];

const ratelimitRollup = (name: string, bucketMs: number): string[] => [
  `CREATE TABLE IF NOT EXISTS ratelimits_per_${name} (
  time Int64,
  workspace_id String,
  namespace_id String,
  identifier String,
  passed UInt8,
  count UInt64,
  cost Int64
) ENGINE = SummingMergeTree((count, cost))
${monthPartition}
ORDER BY (workspace_id, time, namespace_id, identifier, passed)`,
  `CREATE MATERIALIZED VIEW IF NOT EXISTS ratelimits_per_${name}_mv TO ratelimits_per_${name} AS
SELECT
  intDiv(time, ${bucketMs}) * ${bucketMs} AS time,
  workspace_id, namespace_id, identifier, passed,
  count() AS count,
  sum(cost) AS cost
FROM ratelimits_raw
GROUP BY time, workspace_id, namespace_id, identifier, passed`,
];

/**
 * The analytics tables in ClickHouse. Time is Int64 unix ms (18.16 has no
 * DateTime64); the SQL runs on 18.16 and on current ClickHouse alike.
 *
 * Counting each event once: the consumer inserts only request ids not stored
 * yet (ClickHouseAnalyticsStore.insertVerifications), so the raw table and the
 * rollups the materialized views feed from it agree. The raw tables are also
 * ReplacingMergeTree keyed by request id, so a duplicate that slipped past that
 * check (two replicas racing) disappears from the raw table on merge.
 */
export const analyticsMigrations: ClickHouseMigration[] = [
  {
    version: 1,
    name: "raw verifications and rate-limit checks, hourly and daily rollups",
    statements: [
      `CREATE TABLE IF NOT EXISTS key_verifications_raw (
  request_id String,
  time Int64,
  workspace_id String,
  api_id String,
  key_id String,
  identity_id String,
  external_id String,
  outcome String,
  tags Array(String),
  spent_credits Int64,
  latency Float64
) ENGINE = ReplacingMergeTree
${monthPartition}
ORDER BY (workspace_id, time, request_id)`,
      ...verificationRollup("hour", 3_600_000),
      ...verificationRollup("day", 86_400_000),
      `CREATE TABLE IF NOT EXISTS ratelimits_raw (
  request_id String,
  time Int64,
  workspace_id String,
  namespace_id String,
  identifier String,
  passed UInt8,
  \`limit\` Int64,
  remaining Int64,
  reset_at Int64,
  cost Int64,
  override_id String,
  latency Float64
) ENGINE = ReplacingMergeTree
${monthPartition}
ORDER BY (workspace_id, time, request_id)`,
      ...ratelimitRollup("hour", 3_600_000),
      ...ratelimitRollup("day", 86_400_000),
    ],
  },
];

/** Applies each migration not yet recorded in this database's schema_migrations, in version order. */
export async function migrateClickHouse(
  client: ClickHouseClient,
  migrations: readonly ClickHouseMigration[] = analyticsMigrations,
): Promise<number[]> {
  await client.command({
    query: `CREATE TABLE IF NOT EXISTS schema_migrations (
  version UInt32,
  name String,
  applied_at DateTime DEFAULT now()
) ENGINE = ReplacingMergeTree ORDER BY version`,
  });
  const rs = await client.query({
    query: "SELECT DISTINCT version FROM schema_migrations",
    format: "JSONEachRow",
  });
  const done = new Set((await rs.json<{ version: number | string }>()).map((r) => Number(r.version)));
  const applied: number[] = [];
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (done.has(m.version)) continue;
    for (const statement of m.statements) await client.command({ query: statement });
    await client.insert({
      table: "schema_migrations",
      values: [{ version: m.version, name: m.name }],
      format: "JSONEachRow",
    });
    applied.push(m.version);
  }
  return applied;
}

/**
 * The analytics tables in PostgreSQL, for the all-in-one process without
 * ClickHouse (its PGlite or DATABASE_URL): applied with
 * migrate(sql, "analytics", analyticsPostgresMigrations) by
 * createEmbeddedAnalyticsDeps. Time is bigint unix ms, as in every other
 * context. Plain SQL that runs on PostgreSQL 15 and PGlite alike; append new
 * versions, never edit a released one.
 *
 * - analytics_key_verifications_per_ms: verifications rolled up per
 *   millisecond: one row per (time, workspace, api, key, identity, external
 *   id, outcome, tag set) and write, with `count` and the summed credits.
 *   Queries take [start, end) in ms, so summing these rows answers them
 *   exactly. Tags are stored sorted and without repeats. No request id and no
 *   latency: nothing reads them here (rawQuery is unsupported), and a primary
 *   key on a random request id was the costliest part of each write.
 * - analytics_ratelimits_per_ms (version 2; version 1's analytics_ratelimits
 *   held one row per check): rate-limit checks rolled up per millisecond like
 *   the verifications: one row per (time, workspace, namespace, identifier,
 *   passed, override) and write, with `count`, the summed `cost`, and the
 *   latency's sum and max (mean and max over any range stay exact). The same
 *   dimensions as ClickHouse's ratelimits_per_hour/_day, plus the override and
 *   latency. No request id, limit, remaining or reset: they are one check's
 *   answer, not an aggregate, and nothing reads them here.
 * - analytics_batches: the id of every batch written (PostgresAnalyticsStore
 *   inserts it in the rows' transaction and skips a batch whose id is there),
 *   which is how a retried write counts nothing twice; `at` (unix ms) lets old
 *   ids be pruned.
 */
export const analyticsPostgresMigrations: readonly Migration[] = [
  {
    version: 1,
    name: "verifications per ms, rate-limit checks, batches",
    sql: `
CREATE TABLE analytics_key_verifications_per_ms (
  time bigint NOT NULL,
  workspace_id text NOT NULL,
  api_id text NOT NULL,
  key_id text NOT NULL,
  identity_id text NOT NULL,
  external_id text NOT NULL,
  outcome text NOT NULL,
  tags text[] NOT NULL,
  count bigint NOT NULL,
  spent_credits bigint NOT NULL
);
CREATE INDEX analytics_key_verifications_per_ms_workspace_time
  ON analytics_key_verifications_per_ms (workspace_id, time);

CREATE TABLE analytics_ratelimits (
  request_id text NOT NULL,
  time bigint NOT NULL,
  workspace_id text NOT NULL,
  namespace_id text NOT NULL,
  identifier text NOT NULL,
  passed boolean NOT NULL,
  "limit" bigint NOT NULL,
  remaining bigint NOT NULL,
  reset_at bigint NOT NULL,
  cost bigint NOT NULL,
  override_id text NOT NULL,
  latency double precision NOT NULL
);
CREATE INDEX analytics_ratelimits_workspace_time ON analytics_ratelimits (workspace_id, time);

CREATE TABLE analytics_batches (
  id text PRIMARY KEY,
  at bigint NOT NULL
);
CREATE INDEX analytics_batches_at ON analytics_batches (at);
`,
  },
  {
    version: 2,
    name: "rate-limit checks per ms",
    // The checks stored so far are carried over, grouped by the same attributes (across writes, where the
    // store groups within one: the sums are the same). The table of one row per check is then dropped:
    // nothing reads it, nothing would write it any more, and what it held beyond the aggregate (request
    // id, limit, remaining, reset) is what version 2 chooses not to keep. Version 1's rows all say
    // passed = false (the store sent the flag as the string "true", which postgres.js wrote as false);
    // they are carried over as they are: limit and remaining cannot tell which passed.
    sql: `
CREATE TABLE analytics_ratelimits_per_ms (
  time bigint NOT NULL,
  workspace_id text NOT NULL,
  namespace_id text NOT NULL,
  identifier text NOT NULL,
  passed boolean NOT NULL,
  override_id text NOT NULL,
  count bigint NOT NULL,
  cost bigint NOT NULL,
  latency_sum double precision NOT NULL,
  latency_max double precision NOT NULL
);
CREATE INDEX analytics_ratelimits_per_ms_workspace_time ON analytics_ratelimits_per_ms (workspace_id, time);

INSERT INTO analytics_ratelimits_per_ms (time, workspace_id, namespace_id, identifier, passed, override_id,
  count, cost, latency_sum, latency_max)
SELECT time, workspace_id, namespace_id, identifier, passed, override_id,
  count(*), sum(cost)::bigint, sum(latency), max(latency)
FROM analytics_ratelimits
GROUP BY time, workspace_id, namespace_id, identifier, passed, override_id;

DROP TABLE analytics_ratelimits;
`,
  },
];
