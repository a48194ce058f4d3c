import { createClient as createConnectClient, createRouterTransport } from "@connectrpc/connect";
import { AnalyticsService, Granularity, GroupBy } from "@latchkey/proto/analytics/v1/analytics_pb";
import { createLogger, ErrorReason, errorDetailOf } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verification } from "../testing/analytics-store.suite.ts";
import {
  callerOf,
  createQueryUserClickHouse,
  createTestClickHouse,
  rejection,
  type TestClickHouse,
} from "../testing/clickhouse.ts";
import type { QueryRunner } from "./clickhouse.ts";
import type { AnalyticsDeps } from "./deps.ts";
import { ISOLATION_SETTINGS } from "./query-settings.ts";
import { analyticsRoutes } from "./routes.ts";
import { DEFAULT_QUERY_LIMITS, type QueryLimits } from "./store/analytics-store.ts";
import { ClickHouseAnalyticsStore } from "./store/clickhouse-analytics-store.ts";

/**
 * The bounds of analytics queries on real ClickHouse: the read-only query
 * user's own restrictions, proven by connecting as it, and each limit's 4xx
 * through the analytics service.
 */

let db: TestClickHouse & { runner: QueryRunner };
let other: TestClickHouse;
const T = Date.UTC(2026, 0, 15, 10, 30);
/** Rows of ws_big: more than the query user's profile answers (max_result_rows 10,000). */
const BIG = 10_050;
/** A query that reads BIG x BIG joined rows: heavy enough to pass any limit below. */
const HEAVY =
  "SELECT count() AS n FROM key_verifications_v1 AS a INNER JOIN key_verifications_v1 AS b USING outcome";
/** BIG x BIG / 50 joined rows, each matched against a regular expression: slow, in little memory. */
const SLOW =
  "SELECT count() AS n FROM key_verifications_v1 AS a INNER JOIN key_verifications_v1 AS b USING key_id WHERE match(concat(a.request_id, b.request_id, a.request_id, b.request_id, a.request_id, b.request_id, a.request_id, b.request_id, a.request_id, b.request_id, a.request_id, b.request_id), '(.*a.*b.*c.*d.*)+z') OR match(concat(a.request_id, b.request_id, a.request_id, b.request_id, a.request_id, b.request_id, a.request_id, b.request_id, a.request_id, b.request_id, a.request_id, b.request_id), '(.*e.*f.*g.*h.*)+y') OR match(concat(a.request_id, b.request_id, a.request_id, b.request_id, a.request_id, b.request_id, a.request_id, b.request_id, a.request_id, b.request_id, a.request_id, b.request_id), '(.*i.*j.*k.*l.*)+x')";

beforeAll(async () => {
  db = await createQueryUserClickHouse(2);
  other = await createTestClickHouse();
  const store = new ClickHouseAnalyticsStore(db.client);
  await store.insertVerifications(
    Array.from({ length: BIG }, (_, i) =>
      verification({ workspaceId: "ws_big", keyId: `key_${i % 50}`, time: T + i }),
    ),
  );
  await store.insertVerifications([verification({ workspaceId: "ws_small", time: T })]);
  await new ClickHouseAnalyticsStore(other.client).insertVerifications([
    verification({ workspaceId: "ws_x" }),
  ]);
}, 60_000);
afterAll(async () => {
  await db.drop();
  await other.drop();
});

function service(limits: Partial<QueryLimits>, runner: QueryRunner | undefined = db.runner) {
  const store = new ClickHouseAnalyticsStore(db.client, runner);
  const deps: AnalyticsDeps = {
    store,
    log: createLogger("analytics", "silent"),
    ready: () => store.ping(),
    limits: { ...DEFAULT_QUERY_LIMITS, ...limits },
  };
  return createConnectClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
}

const big = callerOf("ws_big", "api.*.read_analytics");

/** A query as the query user, straight to ClickHouse: its error text, or its rows. */
async function asQueryUser(sql: string): Promise<string> {
  try {
    const rs = await db.runner.client.query({ query: sql, format: "JSONEachRow" });
    return JSON.stringify(await rs.json());
  } catch (err) {
    return (err as Error).message;
  }
}

describe("the read-only query user (connected to directly)", () => {
  // The service's timer answers at the limit plus TIMER_GRACE_MS (0.5 s): the query must outlast both, by far,
  // on a quiet machine too: three regular expressions over each joined row, where one alone came close to it.
  it("takes several times the time-limit test's 0.2 s and the timer's grace over a slow query (what that test relies on)", async () => {
    const started = Date.now();
    const answer = await asQueryUser(SLOW.replaceAll("key_verifications_v1", "key_verifications_raw"));
    expect(answer).toMatch(/^\[\{"n":/);
    expect(Date.now() - started).toBeGreaterThan(1_000);
  });

  it("reads its analytics database", async () => {
    expect(await asQueryUser("SELECT count() AS n FROM key_verifications_raw")).toBe(`[{"n":${BIG + 1}}]`);
  });

  it("cannot read another database", async () => {
    expect(await asQueryUser(`SELECT * FROM ${other.database}.key_verifications_raw`)).toMatch(
      /Access denied to database|ACCESS_DENIED|Not enough privileges/,
    );
    expect(await asQueryUser("SELECT * FROM default.schema_migrations")).toMatch(
      /Access denied to database|ACCESS_DENIED|Not enough privileges|doesn't exist/,
    );
  });

  it("sees no other database's tables, columns or parts in system tables", async () => {
    // ClickHouse 18.16 lets every user read `system`, filtered to the databases it may read.
    for (const table of ["tables", "columns", "parts"]) {
      const seen = await asQueryUser(`SELECT DISTINCT database FROM system.${table}`);
      expect(seen).not.toContain(other.database);
      expect(seen).not.toContain('"default"');
    }
    expect(await asQueryUser("SELECT name FROM system.databases")).not.toContain(other.database);
  });

  it("cannot call table functions, change a setting, or write", async () => {
    expect(await asQueryUser("SELECT * FROM numbers(3)")).toMatch(
      /forbidden in readonly mode|Not enough privileges|READONLY/i,
    );
    expect(
      await asQueryUser("SELECT * FROM url('http://127.0.0.1:8123/?query=SELECT+1', CSV, 'a String')"),
    ).toMatch(/forbidden in readonly mode|Not enough privileges|READONLY/i);
    expect(await asQueryUser("SELECT 1 SETTINGS max_execution_time = 0")).toMatch(
      /readonly|READONLY|Cannot (override|modify)/i,
    );
    const insert = await db.runner.client
      .command({ query: "INSERT INTO key_verifications_raw (request_id) VALUES ('x')" })
      .then(() => "inserted")
      .catch((err: Error) => err.message);
    expect(insert).toMatch(/readonly|READONLY|Not enough privileges/i);
  });

  it("has a profile that pins every isolation setting this server knows, and bounds each query's threads and memory and the user's queries and memory in all", async () => {
    const names = [
      ...Object.keys(ISOLATION_SETTINGS),
      "max_threads",
      "max_memory_usage",
      "max_execution_time",
      "max_concurrent_queries_for_user",
      "max_memory_usage_for_user",
    ];
    const seen = Object.fromEntries(
      (
        JSON.parse(
          await asQueryUser(
            `SELECT name, value FROM system.settings WHERE name IN (${names.map((n) => `'${n}'`).join(", ")})`,
          ),
        ) as { name: string; value: string }[]
      ).map((r) => [r.name, r.value]),
    );
    expect(seen).toMatchObject({
      enable_optimize_predicate_expression: "0",
      optimize_move_to_prewhere: "0",
      max_threads: "2",
      max_memory_usage: "1000000000",
      max_execution_time: "10",
      max_concurrent_queries_for_user: "32",
      max_memory_usage_for_user: "8000000000",
    });
    for (const [name, value] of Object.entries(ISOLATION_SETTINGS)) {
      if (name in seen) expect(seen[name], name).toBe(value);
    }
  });

  it("answers at most its profile's 10,000 rows: ClickHouse refuses more, whatever the service allows", async () => {
    const refused = await rejection(
      service({ maxRows: 50_000, maxBytes: 64 * 1024 * 1024 }).getVerifications({
        caller: big,
        query: "SELECT request_id FROM key_verifications_v1",
      }),
    );
    expect(refused.reason).toBe(ErrorReason.ANALYTICS_QUERY_LIMIT);
    expect(refused.message).toMatch(/more than 50000 rows/);
  });
});

describe("limits of raw queries, through the service", () => {
  it("answers 422 naming the row limit for an answer longer than maxRows", async () => {
    const client = service({ maxRows: 100 });
    expect(
      (
        await client.getVerifications({
          caller: big,
          query: "SELECT key_id FROM key_verifications_v1 LIMIT 100",
        })
      ).rows,
    ).toHaveLength(100);
    const refused = await rejection(
      client.getVerifications({ caller: big, query: "SELECT key_id FROM key_verifications_v1" }),
    );
    expect(refused).toEqual({
      reason: ErrorReason.ANALYTICS_QUERY_LIMIT,
      message:
        "The query answers more than 100 rows, the limit for analytics queries; aggregate, or add a LIMIT (code: row_limit).",
    });
  });

  it("answers 422 naming the byte limit for an answer larger than maxBytes", async () => {
    const refused = await rejection(
      service({ maxBytes: 2_000 }).getVerifications({
        caller: big,
        query: "SELECT * FROM key_verifications_v1 LIMIT 50",
      }),
    );
    expect(refused.reason).toBe(ErrorReason.ANALYTICS_QUERY_LIMIT);
    expect(refused.message).toMatch(/more than 2000 bytes/);
  });

  it("answers 422 naming the time limit when the service's timer stops a query", async () => {
    const started = Date.now();
    const refused = await rejection(
      service({ timeoutMs: 200 }).getVerifications({ caller: big, query: SLOW }),
    );
    expect(refused.reason).toBe(ErrorReason.ANALYTICS_QUERY_LIMIT);
    expect(refused.message).toMatch(/ran longer than 0.2 s/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("answers 422 naming the memory limit when ClickHouse's max_memory_usage stops a query", async () => {
    // Without CLICKHOUSE_QUERY_URL: the ingest client, readonly=2 and the limits sent with the query.
    const fallback = service({ timeoutMs: 5_000 }, undefined);
    const refused = await rejection(fallback.getVerifications({ caller: big, query: HEAVY }));
    expect(refused).toEqual({
      reason: ErrorReason.ANALYTICS_QUERY_LIMIT,
      message:
        "The query needs more memory than an analytics query may use; aggregate over fewer rows or groups (code: memory_limit).",
    });
  });

  it("answers 429 past the workspace's concurrent queries, while other workspaces still run", async () => {
    const client = service({ concurrency: 2, timeoutMs: 3_000 });
    const held = [1, 2].map(() =>
      client.getVerifications({ caller: big, query: HEAVY }).then(
        () => "done",
        () => "stopped",
      ),
    );
    await new Promise((r) => setTimeout(r, 50));
    const refused = await rejection(client.getVerifications({ caller: big, query: "SELECT 1 AS x" }));
    expect(refused).toEqual({
      reason: ErrorReason.TOO_MANY_ANALYTICS_QUERIES,
      message:
        "A workspace may run at most 2 analytics queries at once (ANALYTICS_QUERY_CONCURRENCY); retry when one has finished.",
    });
    const small = await client.getVerifications({
      caller: callerOf("ws_small", "api.*.read_analytics"),
      query: "SELECT count() AS n FROM key_verifications_v1",
    });
    expect(small.rows).toEqual([{ n: 1 }]);
    await Promise.all(held);
    expect((await client.getVerifications({ caller: big, query: "SELECT 1 AS x" })).rows).toEqual([{ x: 1 }]);
  });
});

describe("one workspace at its worst, on real ClickHouse", () => {
  it("takes at most its share of the process's queries, each on two threads and within the time limit, while another workspace's queries answer", async () => {
    const client = service({ concurrency: 4, totalConcurrency: 8, timeoutMs: 6_000 });
    const small = callerOf("ws_small", "api.*.read_analytics");
    const started = Date.now();
    let bigDone = 0;
    // Six of the slowest queries at once: four run (its share), two are refused at once.
    const worst = Array.from({ length: 6 }, () =>
      client.getVerifications({ caller: big, query: SLOW }).then(
        () => {
          bigDone++;
          return "answered";
        },
        (err: unknown) => {
          bigDone++;
          return String(errorDetailOf(err)?.reason);
        },
      ),
    );
    await new Promise((r) => setTimeout(r, 100));
    for (let i = 0; i < 3; i++) {
      const asked = Date.now();
      const answer = await client.getVerifications({
        caller: small,
        query: "SELECT count() AS n FROM key_verifications_v1",
      });
      expect(answer.rows).toEqual([{ n: 1 }]);
      expect(Date.now() - asked).toBeLessThan(5_000);
    }
    // ws_small was answered while ws_big's queries still ran.
    expect(bigDone).toBe(2);
    const answers = await Promise.all(worst);
    expect(answers.filter((a) => a === String(ErrorReason.TOO_MANY_ANALYTICS_QUERIES))).toHaveLength(2);
    // Four at once on this machine's cores: each answers, or stops at the time limit.
    expect(
      answers.filter((a) => a === "answered" || a === String(ErrorReason.ANALYTICS_QUERY_LIMIT)),
    ).toHaveLength(4);
    expect(Date.now() - started).toBeGreaterThan(1_000);
  }, 60_000);
});

describe("limits of structured queries on ClickHouse", () => {
  it("answers 422 naming the row limit when the counts exceed structuredMaxRows", async () => {
    const refused = await rejection(
      service({ structuredMaxRows: 10 }).getVerifications({
        caller: big,
        start: BigInt(T),
        end: BigInt(T + 3_600_000),
        granularity: Granularity.HOUR,
        groupBy: GroupBy.KEY,
      }),
    );
    expect(refused.reason).toBe(ErrorReason.ANALYTICS_QUERY_LIMIT);
    expect(refused.message).toMatch(/more than 10 \(bucket, group, outcome\) rows/);
  });
});
