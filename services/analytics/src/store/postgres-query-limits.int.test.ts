import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AnalyticsService, Granularity, GroupBy } from "@latchkey/proto/analytics/v1/analytics_pb";
import { createLogger, ErrorReason } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verification } from "../../testing/analytics-store.suite.ts";
import { callerOf, rejection } from "../../testing/clickhouse.ts";
import { createEmbeddedAnalyticsDeps } from "../deps.ts";
import { analyticsRoutes } from "../routes.ts";
import { DEFAULT_QUERY_LIMITS, type QueryLimits } from "./analytics-store.ts";

/** The structured query's bounds on the embedded PostgreSQL store (`npm start` without ClickHouse). */

let db: TestDatabase;
const T = Date.UTC(2026, 0, 15, 10, 30);
const admin = callerOf("ws_1", "api.*.read_analytics");
const request = {
  caller: admin,
  start: BigInt(T - 3_600_000),
  end: BigInt(T + 86_400_000),
  granularity: Granularity.HOUR,
  groupBy: GroupBy.KEY,
};

beforeAll(async () => {
  db = await createTestDatabase();
  const deps = await createEmbeddedAnalyticsDeps({ sql: db.sql, log: createLogger("analytics", "silent") });
  await deps.store.insertVerifications(
    Array.from({ length: 20_000 }, (_, i) => verification({ keyId: `key_${i % 40}`, time: T + i * 1000 })),
  );
  await deps.close();
}, 60_000);
afterAll(async () => {
  await db?.drop();
});

async function client(limits: Partial<QueryLimits>) {
  const deps = await createEmbeddedAnalyticsDeps({
    sql: db.sql,
    log: createLogger("analytics", "silent"),
    limits: { ...DEFAULT_QUERY_LIMITS, ...limits },
  });
  return createClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
}

describe("structured queries on PostgreSQL", () => {
  it("answer within the limits", async () => {
    const { buckets } = await (await client({})).getVerifications(request);
    expect(buckets.reduce((n, b) => n + b.total, 0n)).toBe(20_000n);
  });

  it("answer 422 naming the row limit past structuredMaxRows", async () => {
    const refused = await rejection((await client({ structuredMaxRows: 100 })).getVerifications(request));
    expect(refused).toEqual({
      reason: ErrorReason.ANALYTICS_QUERY_LIMIT,
      message:
        "The query counts more than 100 (bucket, group, outcome) rows; shorten the range, use a coarser granularity or filter (code: row_limit).",
    });
  });

  it("answer 422 naming the time limit when statement_timeout cancels the query", async () => {
    const refused = await rejection((await client({ timeoutMs: 1 })).getVerifications(request));
    expect(refused).toEqual({
      reason: ErrorReason.ANALYTICS_QUERY_LIMIT,
      message:
        "The query ran longer than 0.001 s, the limit for analytics queries; narrow its time range or aggregate more (code: time_limit).",
    });
  });
});
