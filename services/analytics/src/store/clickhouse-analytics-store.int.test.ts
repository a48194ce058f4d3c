import { afterAll, describe, expect, it } from "vitest";
import { analyticsStoreContract, query, verification } from "../../testing/analytics-store.suite.ts";
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
