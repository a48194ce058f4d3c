import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AnalyticsService, Granularity } from "@latchkey/proto/analytics/v1/analytics_pb";
import { createLogger, ErrorReason } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verification } from "../../testing/analytics-store.suite.ts";
import { callerOf, createTestClickHouse, rejection, type TestClickHouse } from "../../testing/clickhouse.ts";
import type { AnalyticsDeps } from "../deps.ts";
import { failureMessage } from "../query-errors.ts";
import { analyticsRoutes } from "../routes.ts";
import { ClickHouseAnalyticsStore } from "../store/clickhouse-analytics-store.ts";

let db: TestClickHouse;
let client: ReturnType<typeof createClient<typeof AnalyticsService>>;
const admin = callerOf("ws_1", "api.*.read_analytics");
const T = Date.UTC(2026, 0, 15, 10, 30);

beforeAll(async () => {
  db = await createTestClickHouse();
  const store = new ClickHouseAnalyticsStore(db.client);
  const deps: AnalyticsDeps = { store, log: createLogger("analytics", "silent"), ready: () => store.ping() };
  client = createClient(AnalyticsService, createRouterTransport(analyticsRoutes(deps)));
  await store.insertVerifications([
    verification({ time: T, apiId: "api_1", outcome: "VALID", tags: ["a"] }),
    verification({ time: T + 1, apiId: "api_1", outcome: "VALID" }),
    verification({ time: T + 2, apiId: "api_1", outcome: "RATE_LIMITED" }),
    verification({ time: Date.UTC(2026, 1, 3), apiId: "api_2", outcome: "VALID" }),
    verification({ time: T, apiId: "api_1", workspaceId: "ws_2" }),
  ]);
});
afterAll(async () => {
  await db.drop();
});

describe("getVerifications on ClickHouse", () => {
  it("answers the structured form from ClickHouse, month by month", async () => {
    const { buckets } = await client.getVerifications({
      caller: admin,
      start: BigInt(Date.UTC(2026, 0, 1)),
      end: BigInt(Date.UTC(2026, 2, 1)),
      granularity: Granularity.MONTH,
    });
    expect(
      buckets.map((b) => [new Date(Number(b.time)).toISOString(), b.total, b.valid, b.rateLimited]),
    ).toEqual([
      ["2026-01-01T00:00:00.000Z", 3n, 2n, 1n],
      ["2026-02-01T00:00:00.000Z", 1n, 1n, 0n],
    ]);
  });

  it("answers Unkey's raw form over key_verifications_v1, only the caller's workspace", async () => {
    const { rows } = await client.getVerifications({
      caller: admin,
      query: "SELECT outcome, COUNT(*) AS total FROM key_verifications_v1 GROUP BY outcome ORDER BY outcome",
    });
    expect(rows).toEqual([
      { outcome: "RATE_LIMITED", total: 1 },
      { outcome: "VALID", total: 3 },
    ]);
  });

  it("answers raw queries over the hourly, daily and monthly aliases from the rollups", async () => {
    const sum = async (alias: string) =>
      (
        await client.getVerifications({
          caller: admin,
          query: `SELECT sum(count) AS n, min(time) AS first FROM ${alias}`,
        })
      ).rows[0];
    expect(await sum("key_verifications_per_hour_v1")).toEqual({ n: 4, first: "2026-01-15 10:00:00" });
    expect(await sum("key_verifications_per_day_v1")).toEqual({ n: 4, first: "2026-01-15" });
    expect(await sum("key_verifications_per_month_v1")).toEqual({ n: 4, first: "2026-01-01" });
    expect(await sum("key_verifications_per_minute_v1")).toEqual({ n: 4, first: "2026-01-15 10:30:00" });
  });

  it("restricts raw queries of a root key holding one API's read_analytics to that API", async () => {
    const { rows } = await client.getVerifications({
      caller: callerOf("ws_1", "api.api_2.read_analytics"),
      query: "SELECT count() AS n FROM key_verifications_v1 WHERE key_space_id != ''",
    });
    expect(rows).toEqual([{ n: 1 }]);
  });

  it("answers INVALID_ANALYTICS_QUERY with Latchkey's code for a query ClickHouse cannot plan, never ClickHouse's text", async () => {
    const refused = await rejection(
      client.getVerifications({ caller: admin, query: "SELECT no_such_column FROM key_verifications_v1" }),
    );
    expect(refused).toEqual({
      reason: ErrorReason.INVALID_ANALYTICS_QUERY,
      message: failureMessage("query_invalid"),
    });
  });

  it("cannot write, even through a query ClickHouse would accept", async () => {
    const refused = await rejection(
      client.getVerifications({
        caller: admin,
        query: "SELECT 1 FROM key_verifications_v1 SETTINGS readonly=0",
      }),
    );
    expect(refused.reason).toBe(ErrorReason.INVALID_ANALYTICS_QUERY);
  });
});
