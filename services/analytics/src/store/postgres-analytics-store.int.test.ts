import { migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { analyticsPostgresMigrations } from "../migrations.ts";
import { analyticsStoreContract, query, ratelimitCheck, verification } from "./analytics-store.contract.ts";
import { PostgresAnalyticsStore } from "./postgres-analytics-store.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "analytics", analyticsPostgresMigrations);
});
afterAll(async () => {
  await db?.drop();
});

/** One database per file; each test starts from empty tables. */
async function open() {
  await db.sql`TRUNCATE analytics_key_verifications_per_ms, analytics_ratelimits, analytics_batches`;
  return new PostgresAnalyticsStore(db.sql);
}

describe.sequential("PostgresAnalyticsStore", () => {
  analyticsStoreContract("PostgresAnalyticsStore", open, { dedupe: "batch" });

  describe("PostgresAnalyticsStore", () => {
    let store: PostgresAnalyticsStore;
    beforeEach(async () => {
      store = await open();
    });

    it("rolls up a write's verifications per ms and attributes: 5 alike in one ms are one row of count 5, and the counts are exact", async () => {
      const T = Date.UTC(2026, 0, 15, 10, 30);
      const alike = () => verification({ time: T, spentCredits: 2 });
      await store.insertVerifications(
        [
          ...[alike(), alike(), alike(), alike(), alike()],
          ...[1, 2, 3].map(() => verification({ time: T + 1 })),
          verification({ time: T, outcome: "EXPIRED", spentCredits: 0 }),
          // The same tag set in any order, repeats or not, is one row.
          verification({ time: T, tags: ["b", "a"] }),
          verification({ time: T, tags: ["a", "b", "a"] }),
        ],
        "batch_1",
      );
      const rows = () => db.sql`
        SELECT time, outcome, tags, count, spent_credits FROM analytics_key_verifications_per_ms
        ORDER BY time, outcome, cardinality(tags), count`;
      expect(await rows()).toEqual([
        { time: T, outcome: "EXPIRED", tags: [], count: 1, spent_credits: 0 },
        { time: T, outcome: "VALID", tags: [], count: 5, spent_credits: 10 },
        { time: T, outcome: "VALID", tags: ["a", "b"], count: 2, spent_credits: 2 },
        { time: T + 1, outcome: "VALID", tags: [], count: 3, spent_credits: 3 },
      ]);
      const counted = async (start: number, end: number) =>
        (await store.verifications(query({ start, end, granularity: "hour", groupBy: "outcome" })))
          .map((r) => `${r.outcome} ${r.count} ${r.spentCredits}`)
          .sort();
      expect(await counted(T, T + 1)).toEqual(["EXPIRED 1 0", "VALID 7 12"]);
      expect(await counted(T + 1, T + 2)).toEqual(["VALID 3 3"]);
      expect(await counted(T, T + 2)).toEqual(["EXPIRED 1 0", "VALID 10 15"]);

      // Another write of the same attributes is another row; the sums stay exact.
      await store.insertVerifications([alike(), alike()], "batch_2");
      expect((await rows()).filter((r) => r.count === 2 && r.tags.length === 0)).toHaveLength(1);
      expect(await counted(T, T + 1)).toEqual(["EXPIRED 1 0", "VALID 9 16"]);
    });

    it("keeps every field of a verification (in a write of 2,500) and of a rate-limit check", async () => {
      const T = Date.UTC(2026, 0, 15, 10, 30);
      const v = verification({
        time: T,
        identityId: "id_1",
        externalId: "user_'1",
        tags: ["b", 'a,"x"', "b", "", "a\\b", "c\0"],
        spentCredits: 7,
      });
      const others = Array.from({ length: 2_499 }, (_, i) => verification({ time: T + 1 + i }));
      expect(await store.insertVerifications([v, ...others], "batch_1")).toBe(2_500);
      const [row] = await db.sql`SELECT * FROM analytics_key_verifications_per_ms WHERE time = ${T}`;
      expect(row).toEqual({
        time: T,
        workspace_id: "ws_1",
        api_id: "api_1",
        key_id: "key_1",
        identity_id: "id_1",
        external_id: "user_'1",
        outcome: "VALID",
        // Sorted, distinct, and the NUL PostgreSQL cannot store left out.
        tags: ["", 'a,"x"', "a\\b", "b", "c"],
        count: 1,
        spent_credits: 7,
      });
      expect(await db.sql`SELECT count(*)::int AS n FROM analytics_key_verifications_per_ms`).toEqual([
        { n: 2_500 },
      ]);

      const c = ratelimitCheck({ passed: false, limit: 100, remaining: 0, cost: 3, overrideId: "ovr_1" });
      expect(await store.insertRatelimits([c])).toBe(1);
      const [check] = await db.sql`SELECT * FROM analytics_ratelimits WHERE request_id = ${c.requestId}`;
      expect(check).toEqual({
        request_id: c.requestId,
        time: c.time,
        workspace_id: "ws_1",
        namespace_id: "rlns_1",
        identifier: "user_1",
        passed: false,
        limit: 100,
        remaining: 0,
        reset_at: c.reset,
        cost: 3,
        override_id: "ovr_1",
        latency: 0.2,
      });
    });

    it("stores a batch's id in its rows' transaction: a write that failed leaves none, and its retry is stored", async () => {
      const good = [verification(), verification()];
      // PostgreSQL refuses NUL in text: the rows' INSERT fails after the batch id's.
      await expect(
        store.insertVerifications([...good, verification({ workspaceId: "ws_\0" })], "batch_1"),
      ).rejects.toThrow();
      expect(await db.sql`SELECT id FROM analytics_batches`).toEqual([]);
      expect(await store.insertVerifications(good, "batch_1")).toBe(2);
      expect(await store.insertVerifications(good, "batch_1")).toBe(0);
      expect(await db.sql`SELECT id FROM analytics_batches`).toEqual([{ id: "verifications:batch_1" }]);
    });

    it("writes a batch of more rows than one INSERT carries in one transaction, and skips its repeat", async () => {
      const T = Date.UTC(2026, 0, 15);
      const batch = Array.from({ length: 10_001 }, (_, i) => verification({ time: T + i }));
      expect(await store.insertVerifications(batch, "batch_1")).toBe(10_001);
      expect(await store.insertVerifications(batch, "batch_1")).toBe(0);
      expect(await db.sql`SELECT sum(count)::int AS n FROM analytics_key_verifications_per_ms`).toEqual([
        { n: 10_001 },
      ]);
    });

    it("remembers batch ids, not request ids: a repeat without a batch id or under another one counts again", async () => {
      const a = verification();
      expect(await store.insertVerifications([a])).toBe(1);
      expect(await store.insertVerifications([a])).toBe(1);
      expect(await store.insertVerifications([a], "batch_1")).toBe(1);
      expect((await store.verifications(query())).reduce((n, r) => n + r.count, 0)).toBe(3);
    });

    it("deletes batch ids older than a day when it writes a batch", async () => {
      const now = Date.now();
      await db.sql`INSERT INTO analytics_batches (id, at) VALUES ('old', ${now - 86_400_001}), ('recent', ${now - 3_600_000})`;
      await store.insertVerifications([verification()], "batch_1");
      expect((await db.sql`SELECT id FROM analytics_batches ORDER BY id`).map((r) => r.id)).toEqual([
        "recent",
        "verifications:batch_1",
      ]);
    });

    it("counts the tags of a row once each when grouped by tag, and none for a row without tags", async () => {
      await store.insertVerifications([verification({ tags: ["a", "a", "b"] }), verification({ tags: [] })]);
      const rows = await store.verifications(query({ groupBy: "tag" }));
      expect(rows.map((r) => `${r.group} ${r.count}`).sort()).toEqual(["a 1", "b 1"]);
    });

    it("buckets months in UTC whatever the session's time zone", async () => {
      await store.insertVerifications([verification({ time: Date.UTC(2026, 1, 1, 0, 30) })]);
      const rows = await db.sql.begin(async (tx) => {
        await tx`SET LOCAL TIME ZONE 'America/Los_Angeles'`;
        return new PostgresAnalyticsStore(tx as unknown as typeof db.sql).verifications(
          query({ granularity: "month" }),
        );
      });
      expect(rows.map((r) => new Date(r.time).toISOString())).toEqual(["2026-02-01T00:00:00.000Z"]);
    });
  });
});
