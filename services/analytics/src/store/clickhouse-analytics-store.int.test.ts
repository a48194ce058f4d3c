import { afterAll, describe, expect, it } from "vitest";
import {
  analyticsStoreContract,
  query,
  ratelimitCheck,
  verification,
} from "../../testing/analytics-store.suite.ts";
import { createTestClickHouse, type TestClickHouse } from "../../testing/clickhouse.ts";
import { migrateClickHouse } from "../migrations.ts";
import { ClickHouseAnalyticsStore, segments } from "./clickhouse-analytics-store.ts";

const databases: TestClickHouse[] = [];
afterAll(async () => {
  await Promise.all(databases.map((d) => d.drop()));
});

async function open() {
  const db = await createTestClickHouse();
  databases.push(db);
  return { db, store: new ClickHouseAnalyticsStore(db.client) };
}

analyticsStoreContract("ClickHouseAnalyticsStore", async () => (await open()).store, { dedupe: "requestId" });

describe("ClickHouseAnalyticsStore", () => {
  it("reads whole days from the daily rollup, whole hours from the hourly one, edges from the raw table", () => {
    const start = Date.UTC(2026, 0, 31, 23, 30);
    const end = Date.UTC(2026, 1, 3, 1, 10);
    expect(segments(start, end, "day")).toEqual([
      { source: "raw", from: start, to: Date.UTC(2026, 1, 1) },
      { source: "day", from: Date.UTC(2026, 1, 1), to: Date.UTC(2026, 1, 3) },
      { source: "hour", from: Date.UTC(2026, 1, 3), to: Date.UTC(2026, 1, 3, 1) },
      { source: "raw", from: Date.UTC(2026, 1, 3, 1), to: end },
    ]);
    expect(segments(start, end, "hour").map((s) => s.source)).toEqual(["raw", "hour", "raw"]);
    expect(segments(start, start + 60_000, "month")).toEqual([
      { source: "raw", from: start, to: start + 60_000 },
    ]);
  });

  it("keeps the rollups equal to the raw table when redelivered events are inserted again", async () => {
    const { db, store } = await open();
    const events = Array.from({ length: 50 }, (_, i) =>
      verification({ time: Date.UTC(2026, 0, 10 + (i % 5), i % 24), tags: i % 2 ? ["a"] : [] }),
    );
    await store.insertVerifications(events);
    await store.insertVerifications(events.slice(10, 30));
    const sum = async (table: string, expr: string) => {
      const rs = await db.client.query({ query: `SELECT ${expr} AS n FROM ${table}`, format: "JSONEachRow" });
      return Number((await rs.json<{ n: number }>())[0]?.n);
    };
    expect(await sum("key_verifications_raw", "count()")).toBe(50);
    expect(await sum("key_verifications_per_hour", "sum(count)")).toBe(50);
    expect(await sum("key_verifications_per_day", "sum(count)")).toBe(50);
    const rows = await store.verifications(query({ tags: ["a"] }));
    expect(rows.reduce((n, r) => n + r.count, 0)).toBe(25);
  });

  it("keeps a row of n identical checks as n rows of ratelimits_raw, each with what it had left, once however often it is inserted", async () => {
    const { db, store } = await open();
    const passed = ratelimitCheck({ requestId: "rln_1:0", count: 3, remaining: 4, cost: 2 });
    const refused = ratelimitCheck({ requestId: "rln_1:1", count: 2, remaining: 0, passed: false });
    expect(await store.insertRatelimits([passed, refused])).toBe(5);
    expect(await store.insertRatelimits([passed, refused])).toBe(0);
    const rs = await db.client.query({
      query: "SELECT request_id, passed, remaining FROM ratelimits_raw ORDER BY request_id",
      format: "JSONEachRow",
    });
    expect(await rs.json()).toEqual([
      { request_id: "rln_1:0", passed: 1, remaining: 8 },
      { request_id: "rln_1:0/1", passed: 1, remaining: 6 },
      { request_id: "rln_1:0/2", passed: 1, remaining: 4 },
      { request_id: "rln_1:1", passed: 0, remaining: 0 },
      { request_id: "rln_1:1/1", passed: 0, remaining: 0 },
    ]);
    const rollup = await db.client.query({
      query:
        "SELECT passed, sum(count) AS n, sum(cost) AS cost FROM ratelimits_per_hour GROUP BY passed ORDER BY passed",
      format: "JSONEachRow",
    });
    expect(await rollup.json()).toEqual([
      { passed: 0, n: 2, cost: 2 },
      { passed: 1, n: 3, cost: 6 },
    ]);
  });

  it("records each migration once in its schema_migrations table and applies nothing the second time", async () => {
    const { db } = await open();
    expect(await migrateClickHouse(db.client)).toEqual([]);
    const rs = await db.client.query({
      query: "SELECT version, count() AS n FROM schema_migrations GROUP BY version",
      format: "JSONEachRow",
    });
    expect(await rs.json()).toEqual([{ version: 1, n: 1 }]);
  });
});
