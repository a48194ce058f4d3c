import { migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  analyticsStoreContract,
  query,
  ratelimitCheck,
  verification,
} from "../../testing/analytics-store.suite.ts";
import { analyticsPostgresMigrations } from "../migrations.ts";
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
  await db.sql`TRUNCATE analytics_key_verifications_per_ms, analytics_ratelimits_per_ms, analytics_batches`;
  return new PostgresAnalyticsStore(db.sql);
}

describe("analyticsPostgresMigrations", () => {
  it("carries version 1's rate-limit checks over to version 2 grouped by ms and attributes, and drops their table", async () => {
    const old = await createTestDatabase();
    try {
      const v1 = analyticsPostgresMigrations.filter((m) => m.version === 1);
      await migrate(old.sql, "analytics", v1);
      const T = Date.UTC(2026, 0, 15, 10, 30);
      const checks = [
        ratelimitCheck({ time: T, cost: 1, latency: 0.25 }),
        ratelimitCheck({ time: T, cost: 2, latency: 1.5 }),
        ratelimitCheck({ time: T, cost: 3, latency: 0.25 }),
        ratelimitCheck({ time: T, passed: false, cost: 4, latency: 0.5 }),
        ratelimitCheck({ time: T + 1, workspaceId: "ws_2", overrideId: "ovr_1", cost: 5, latency: 2 }),
      ];
      for (const c of checks) {
        await old.sql`
          INSERT INTO analytics_ratelimits (request_id, time, workspace_id, namespace_id, identifier, passed,
            "limit", remaining, reset_at, cost, override_id, latency)
          VALUES (${c.requestId}, ${c.time}, ${c.workspaceId}, ${c.namespaceId}, ${c.identifier}, ${c.passed},
            ${c.limit}, ${c.remaining}, ${c.reset}, ${c.cost}, ${c.overrideId}, ${c.latency})`;
      }

      await migrate(old.sql, "analytics", analyticsPostgresMigrations);
      expect(
        await old.sql`
          SELECT time, workspace_id, namespace_id, identifier, passed, override_id, count, cost, latency_sum,
            latency_max
          FROM analytics_ratelimits_per_ms ORDER BY time, passed`,
      ).toEqual([
        {
          time: T,
          workspace_id: "ws_1",
          namespace_id: "rlns_1",
          identifier: "user_1",
          passed: false,
          override_id: "",
          count: 1,
          cost: 4,
          latency_sum: 0.5,
          latency_max: 0.5,
        },
        {
          time: T,
          workspace_id: "ws_1",
          namespace_id: "rlns_1",
          identifier: "user_1",
          passed: true,
          override_id: "",
          count: 3,
          cost: 6,
          latency_sum: 2,
          latency_max: 1.5,
        },
        {
          time: T + 1,
          workspace_id: "ws_2",
          namespace_id: "rlns_1",
          identifier: "user_1",
          passed: true,
          override_id: "ovr_1",
          count: 1,
          cost: 5,
          latency_sum: 2,
          latency_max: 2,
        },
      ]);
      expect(await old.sql`SELECT to_regclass('analytics_ratelimits') AS t`).toEqual([{ t: null }]);
      expect(await new PostgresAnalyticsStore(old.sql).insertRatelimits([ratelimitCheck({ time: T })])).toBe(
        1,
      );
      expect(await old.sql`SELECT sum(count)::int AS n FROM analytics_ratelimits_per_ms`).toEqual([{ n: 6 }]);
    } finally {
      await old.drop();
    }
  });
});

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

      const c = ratelimitCheck({ passed: false, cost: 3, overrideId: "ovr_'1", latency: 0.25 });
      expect(await store.insertRatelimits([c])).toBe(1);
      expect(await db.sql`SELECT * FROM analytics_ratelimits_per_ms`).toEqual([
        {
          time: c.time,
          workspace_id: "ws_1",
          namespace_id: "rlns_1",
          identifier: "user_1",
          passed: false,
          override_id: "ovr_'1",
          count: 1,
          cost: 3,
          latency_sum: 0.25,
          latency_max: 0.25,
        },
      ]);
    });

    it("stores a rate-limit check whose identifier holds U+0000 without it, rather than failing its batch", async () => {
      const T = Date.UTC(2026, 0, 16, 10, 30);
      const checks = [
        ratelimitCheck({ time: T, identifier: "a\0b" }),
        ratelimitCheck({ time: T, identifier: "ab" }),
      ];
      expect(await store.insertRatelimits(checks, "batch_nul")).toBe(2);
      expect(
        await db.sql`SELECT identifier, count FROM analytics_ratelimits_per_ms WHERE time = ${T}`,
      ).toEqual([{ identifier: "ab", count: 2 }]);
    });

    it("rolls up a write's rate-limit checks per ms and attributes: 4 alike in one ms are one row of count 4 with their cost summed", async () => {
      const T = Date.UTC(2026, 0, 15, 10, 30);
      const alike = (cost: number, latency: number) => ratelimitCheck({ time: T, cost, latency });
      const checks = [
        ...[alike(1, 0.25), alike(2, 1.5), alike(3, 0.5), alike(4, 0.25)],
        // Each differs from those 4 in one attribute: a row of its own.
        ratelimitCheck({ time: T, passed: false, cost: 5, latency: 2 }),
        ratelimitCheck({ time: T, passed: false, cost: 6, latency: 1 }),
        ratelimitCheck({ time: T, identifier: "user_2", cost: 7, latency: 0.5 }),
        ratelimitCheck({ time: T, namespaceId: "rlns_2", cost: 8, latency: 0.5 }),
        ratelimitCheck({ time: T, overrideId: "ovr_1", cost: 9, latency: 0.5 }),
        ratelimitCheck({ time: T + 1, cost: 10, latency: 0.5 }),
      ];
      expect(await store.insertRatelimits(checks, "batch_1")).toBe(10);
      const rows = () => db.sql`
        SELECT time, namespace_id, identifier, passed, override_id, count, cost, latency_sum, latency_max
        FROM analytics_ratelimits_per_ms ORDER BY time, namespace_id, identifier, passed, override_id, count`;
      const row = (fields: Record<string, unknown>) => ({
        time: T,
        namespace_id: "rlns_1",
        identifier: "user_1",
        passed: true,
        override_id: "",
        count: 1,
        ...fields,
      });
      expect(await rows()).toEqual([
        row({ passed: false, count: 2, cost: 11, latency_sum: 3, latency_max: 2 }),
        row({ count: 4, cost: 10, latency_sum: 2.5, latency_max: 1.5 }),
        row({ override_id: "ovr_1", cost: 9, latency_sum: 0.5, latency_max: 0.5 }),
        row({ identifier: "user_2", cost: 7, latency_sum: 0.5, latency_max: 0.5 }),
        row({ namespace_id: "rlns_2", cost: 8, latency_sum: 0.5, latency_max: 0.5 }),
        row({ time: T + 1, cost: 10, latency_sum: 0.5, latency_max: 0.5 }),
      ]);

      // Another write of the same attributes is another row; the sums stay exact.
      expect(await store.insertRatelimits([alike(1, 3), alike(1, 0.5)], "batch_2")).toBe(2);
      expect(
        await db.sql`
          SELECT count(*)::int AS rows, sum(count)::int AS checks, sum(cost)::int AS cost,
            sum(latency_sum) AS latency_sum, max(latency_max) AS latency_max
          FROM analytics_ratelimits_per_ms WHERE time = ${T} AND passed AND identifier = 'user_1'
            AND namespace_id = 'rlns_1' AND override_id = ''`,
      ).toEqual([{ rows: 2, checks: 6, cost: 12, latency_sum: 6, latency_max: 3 }]);
    });

    it("stores nothing for a retried batch id of rate-limit checks and counts a request id repeated within a call once", async () => {
      const T = Date.UTC(2026, 0, 15, 10, 30);
      const a = ratelimitCheck({ time: T, cost: 2 });
      const b = ratelimitCheck({ time: T, cost: 3 });
      const batch = [a, b, a, { ...a, cost: 100 }];
      const stored = () => db.sql`
        SELECT count(*)::int AS rows, sum(count)::int AS checks, sum(cost)::int AS cost
        FROM analytics_ratelimits_per_ms`;
      expect(await store.insertRatelimits(batch, "batch_1")).toBe(2);
      expect(await stored()).toEqual([{ rows: 1, checks: 2, cost: 5 }]);
      expect(await store.insertRatelimits(batch, "batch_1")).toBe(0);
      expect(await stored()).toEqual([{ rows: 1, checks: 2, cost: 5 }]);
      // The id is claimed per kind: verifications may share it, and do not take it from the checks.
      expect(await store.insertVerifications([verification()], "batch_2")).toBe(1);
      expect(await store.insertRatelimits([a], "batch_2")).toBe(1);
      expect(await stored()).toEqual([{ rows: 2, checks: 3, cost: 7 }]);
      expect((await db.sql`SELECT id FROM analytics_batches ORDER BY id`).map((r) => r.id)).toEqual([
        "ratelimits:batch_1",
        "ratelimits:batch_2",
        "verifications:batch_2",
      ]);
    });

    it("writes a batch of more rate-limit rows than one INSERT carries in one transaction, and skips its repeat", async () => {
      const T = Date.UTC(2026, 0, 15);
      const batch = Array.from({ length: 10_001 }, (_, i) => ratelimitCheck({ time: T + i }));
      expect(await store.insertRatelimits(batch, "batch_1")).toBe(10_001);
      expect(await store.insertRatelimits(batch, "batch_1")).toBe(0);
      expect(
        await db.sql`SELECT count(*)::int AS rows, sum(count)::int AS n FROM analytics_ratelimits_per_ms`,
      ).toEqual([{ rows: 10_001, n: 10_001 }]);
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
