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
  await db.sql`TRUNCATE analytics_key_verifications, analytics_ratelimits`;
  return new PostgresAnalyticsStore(db.sql);
}

describe.sequential("PostgresAnalyticsStore", () => {
  analyticsStoreContract("PostgresAnalyticsStore", open);

  describe("PostgresAnalyticsStore", () => {
    let store: PostgresAnalyticsStore;
    beforeEach(async () => {
      store = await open();
    });

    it("keeps every field of a verification (in a batch of 2,500) and of a rate-limit check", async () => {
      const v = verification({
        identityId: "id_1",
        externalId: "user_'1",
        tags: ["b", 'a,"x"', "b", ""],
        spentCredits: 7,
        latency: 1.25,
      });
      expect(
        await store.insertVerifications([v, ...Array.from({ length: 2_499 }, () => verification())]),
      ).toBe(2_500);
      const [row] = await db.sql`SELECT * FROM analytics_key_verifications WHERE request_id = ${v.requestId}`;
      expect(row).toEqual({
        request_id: v.requestId,
        time: v.time,
        workspace_id: "ws_1",
        api_id: "api_1",
        key_id: "key_1",
        identity_id: "id_1",
        external_id: "user_'1",
        outcome: "VALID",
        tags: ["b", 'a,"x"', ""],
        spent_credits: 7,
        latency: 1.25,
      });

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
