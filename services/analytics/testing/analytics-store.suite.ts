import { beforeEach, describe, expect, it } from "vitest";
import type {
  AnalyticsStore,
  RatelimitCheck,
  RatelimitCount,
  RatelimitQuery,
  Verification,
  VerificationCount,
  VerificationQuery,
} from "../src/store/analytics-store.ts";

let seq = 0;

/** A verification with sensible defaults; only what a test cares about is spelled out. */
export function verification(fields: Partial<Verification> = {}): Verification {
  seq++;
  return {
    requestId: `req_${seq}_${Math.random().toString(36).slice(2, 10)}`,
    time: Date.UTC(2026, 0, 15, 10, 30),
    workspaceId: "ws_1",
    apiId: "api_1",
    keyId: "key_1",
    identityId: "",
    externalId: "",
    outcome: "VALID",
    tags: [],
    spentCredits: 1,
    latency: 0.5,
    ...fields,
  };
}

export function ratelimitCheck(fields: Partial<RatelimitCheck> = {}): RatelimitCheck {
  seq++;
  return {
    requestId: `req_rl_${seq}_${Math.random().toString(36).slice(2, 10)}`,
    time: Date.UTC(2026, 0, 15, 10, 30),
    workspaceId: "ws_1",
    namespaceId: "rlns_1",
    identifier: "user_1",
    passed: true,
    limit: 10,
    remaining: 9,
    reset: Date.UTC(2026, 0, 15, 10, 31),
    cost: 1,
    overrideId: "",
    latency: 0.2,
    ...fields,
  };
}

export function query(fields: Partial<VerificationQuery> = {}): VerificationQuery {
  return {
    workspaceId: "ws_1",
    start: Date.UTC(2026, 0, 1),
    end: Date.UTC(2026, 2, 1),
    apiIds: undefined,
    keyId: undefined,
    identity: undefined,
    tags: [],
    granularity: "day",
    groupBy: "none",
    ...fields,
  };
}

/** Rows in a stable order, as "time group outcome count", for exact comparison. */
export function table(rows: VerificationCount[]): string[] {
  return rows
    .map(
      (r) =>
        `${new Date(r.time).toISOString()} ${r.group || "-"}${r.externalId ? `/${r.externalId}` : ""} ${r.outcome} ${r.count}`,
    )
    .sort();
}

const total = (rows: VerificationCount[]) => rows.reduce((n, r) => n + r.count, 0);

/**
 * What every AnalyticsStore must do; run by memory-analytics-store.test.ts,
 * clickhouse-analytics-store.int.test.ts and postgres-analytics-store.int.test.ts.
 * `open` gives an empty store; `dedupe` says how it counts events once across
 * calls (AnalyticsStore): the request-id tests run only for stores that look
 * request ids up across calls, the batch tests for every store.
 */
export function analyticsStoreContract(
  name: string,
  open: () => Promise<AnalyticsStore>,
  { dedupe }: { dedupe: "requestId" | "batch" },
) {
  describe(`${name} (AnalyticsStore contract)`, () => {
    let store: AnalyticsStore;
    beforeEach(async () => {
      store = await open();
    });

    it("counts verifications per outcome in their day", async () => {
      await store.insertVerifications([
        verification(),
        verification(),
        verification({ outcome: "RATE_LIMITED", spentCredits: 0 }),
        verification({ time: Date.UTC(2026, 0, 16, 1) }),
      ]);
      const rows = await store.verifications(query());
      expect(table(rows)).toEqual([
        "2026-01-15T00:00:00.000Z - RATE_LIMITED 1",
        "2026-01-15T00:00:00.000Z - VALID 2",
        "2026-01-16T00:00:00.000Z - VALID 1",
      ]);
      expect(rows.find((r) => r.outcome === "VALID" && r.time === Date.UTC(2026, 0, 15))?.spentCredits).toBe(
        2,
      );
    });

    it("counts rate-limit checks passed and refused per bucket, namespace and identifier, restricted to the namespaces given", async () => {
      const at = (h: number, m = 0) => Date.UTC(2026, 0, 15, h, m);
      await store.insertRatelimits([
        ratelimitCheck({ time: at(10, 1) }),
        ratelimitCheck({ time: at(10, 59) }),
        ratelimitCheck({ time: at(10, 59), passed: false }),
        ratelimitCheck({ time: at(11), identifier: "user_2", passed: false }),
        ratelimitCheck({ time: at(11), namespaceId: "rlns_2" }),
        ratelimitCheck({ time: Date.UTC(2026, 0, 16, 3), namespaceId: "rlns_2" }),
        ratelimitCheck({ time: at(11), workspaceId: "ws_2" }),
      ]);
      const q: RatelimitQuery = {
        workspaceId: "ws_1",
        start: Date.UTC(2026, 0, 15),
        end: Date.UTC(2026, 0, 17),
        namespaceIds: undefined,
        identifier: undefined,
        granularity: "day",
        groupBy: "none",
      };
      const rows = (r: RatelimitCount[]) =>
        r
          .map(
            (c) =>
              `${new Date(c.time).toISOString()} ${c.namespaceId || "-"} ${c.identifier || "-"} ${c.passed ? "passed" : "refused"} ${c.count}`,
          )
          .sort();
      expect(rows(await store.ratelimits(q))).toEqual([
        "2026-01-15T00:00:00.000Z - - passed 3",
        "2026-01-15T00:00:00.000Z - - refused 2",
        "2026-01-16T00:00:00.000Z - - passed 1",
      ]);
      expect(
        rows(
          await store.ratelimits({
            ...q,
            granularity: "hour",
            groupBy: "identifier",
            namespaceIds: ["rlns_1"],
          }),
        ),
      ).toEqual([
        "2026-01-15T10:00:00.000Z rlns_1 user_1 passed 2",
        "2026-01-15T10:00:00.000Z rlns_1 user_1 refused 1",
        "2026-01-15T11:00:00.000Z rlns_1 user_2 refused 1",
      ]);
      expect(rows(await store.ratelimits({ ...q, granularity: "month", groupBy: "namespace" }))).toEqual([
        "2026-01-01T00:00:00.000Z rlns_1 - passed 2",
        "2026-01-01T00:00:00.000Z rlns_1 - refused 2",
        "2026-01-01T00:00:00.000Z rlns_2 - passed 2",
      ]);
      expect(rows(await store.ratelimits({ ...q, identifier: "user_2" }))).toEqual([
        "2026-01-15T00:00:00.000Z - - refused 1",
      ]);
      expect(await store.ratelimits({ ...q, namespaceIds: [] })).toEqual([]);
      expect(rows(await store.ratelimits({ ...q, workspaceId: "ws_2" }))).toEqual([
        "2026-01-15T00:00:00.000Z - - passed 1",
      ]);
      // A range with ragged edges (part hours) counts exactly what falls inside it.
      expect(
        rows(await store.ratelimits({ ...q, start: at(10, 30), end: at(11, 0) + 1, granularity: "hour" })),
      ).toEqual([
        "2026-01-15T10:00:00.000Z - - passed 1",
        "2026-01-15T10:00:00.000Z - - refused 1",
        "2026-01-15T11:00:00.000Z - - passed 1",
        "2026-01-15T11:00:00.000Z - - refused 1",
      ]);
    });

    it("counts a row standing for n identical checks n times, its cost too", async () => {
      const at = Date.UTC(2026, 0, 15, 10, 30);
      await store.insertRatelimits([
        ratelimitCheck({ time: at, count: 4 }),
        ratelimitCheck({ time: at, count: 2, passed: false }),
        ratelimitCheck({ time: at }),
      ]);
      const rows = await store.ratelimits({
        workspaceId: "ws_1",
        start: Date.UTC(2026, 0, 15),
        end: Date.UTC(2026, 0, 16),
        namespaceIds: undefined,
        identifier: undefined,
        granularity: "hour",
        groupBy: "none",
      });
      expect(rows.map((r) => [r.passed, r.count]).sort()).toEqual([
        [false, 2],
        [true, 5],
      ]);
    });

    it("counts a batch once however often it is inserted with its id, each other batch too, and answers how many were new", async () => {
      const a = verification();
      const b = verification();
      expect(await store.insertVerifications([a, a, b], "batch_1")).toBe(2);
      expect(await store.insertVerifications([a, a, b], "batch_1")).toBe(0);
      expect(await store.insertVerifications([verification(), verification()], "batch_2")).toBe(2);
      expect(await store.insertVerifications([verification()], "batch_3")).toBe(1);
      expect(total(await store.verifications(query()))).toBe(5);
      expect(total(await store.verifications(query({ granularity: "hour" })))).toBe(5);
      expect(total(await store.verifications(query({ granularity: "month" })))).toBe(5);
    });

    it("keeps rate-limit checks once per request id in a call and once per batch id, which verifications may share", async () => {
      await store.insertVerifications([verification()], "batch_1");
      const c = ratelimitCheck();
      const batch = [c, c, ratelimitCheck({ passed: false })];
      expect(await store.insertRatelimits(batch, "batch_1")).toBe(2);
      expect(await store.insertRatelimits(batch, "batch_1")).toBe(0);
      expect(await store.insertRatelimits([ratelimitCheck()], "batch_2")).toBe(1);
    });

    if (dedupe === "requestId") {
      it("counts an event once however often it is inserted, in any batch or none", async () => {
        const a = verification();
        const b = verification();
        expect(await store.insertVerifications([a, a, b])).toBe(2);
        expect(await store.insertVerifications([a, b])).toBe(0);
        expect(await store.insertVerifications([b, verification()], "batch_1")).toBe(1);
        expect(total(await store.verifications(query()))).toBe(3);
      });

      it("keeps rate-limit checks once per request id across calls", async () => {
        const c = ratelimitCheck();
        expect(await store.insertRatelimits([c, c, ratelimitCheck({ passed: false })])).toBe(2);
        expect(await store.insertRatelimits([c])).toBe(0);
      });
    }

    it("counts nothing of another workspace", async () => {
      await store.insertVerifications([verification({ workspaceId: "ws_2" }), verification()]);
      expect(total(await store.verifications(query()))).toBe(1);
      expect(total(await store.verifications(query({ workspaceId: "ws_3" })))).toBe(0);
    });

    it("counts [start, end): the start included, the end excluded", async () => {
      const start = Date.UTC(2026, 0, 15, 10, 0, 0, 123);
      const end = Date.UTC(2026, 0, 15, 11, 0, 0, 456);
      await store.insertVerifications([
        verification({ time: start - 1 }),
        verification({ time: start }),
        verification({ time: end - 1 }),
        verification({ time: end }),
      ]);
      expect(total(await store.verifications(query({ start, end, granularity: "hour" })))).toBe(2);
    });

    it("filters by the allowed APIs, a key, an identity id or external id, and every given tag", async () => {
      await store.insertVerifications([
        verification({
          apiId: "api_1",
          keyId: "key_1",
          identityId: "id_1",
          externalId: "user_1",
          tags: ["a", "b"],
        }),
        verification({ apiId: "api_1", keyId: "key_2", tags: ["a"] }),
        verification({
          apiId: "api_2",
          keyId: "key_3",
          identityId: "id_1",
          externalId: "user_1",
          tags: ["b"],
        }),
      ]);
      expect(total(await store.verifications(query({ apiIds: ["api_1"] })))).toBe(2);
      expect(total(await store.verifications(query({ apiIds: ["api_1", "api_2"] })))).toBe(3);
      expect(total(await store.verifications(query({ apiIds: [] })))).toBe(0);
      expect(total(await store.verifications(query({ keyId: "key_2" })))).toBe(1);
      expect(total(await store.verifications(query({ identity: "id_1" })))).toBe(2);
      expect(total(await store.verifications(query({ identity: "user_1", apiIds: ["api_2"] })))).toBe(1);
      expect(total(await store.verifications(query({ tags: ["a"] })))).toBe(2);
      expect(total(await store.verifications(query({ tags: ["a", "b"] })))).toBe(1);
      expect(total(await store.verifications(query({ tags: ["c"] })))).toBe(0);
    });

    it("groups by key, identity, tag and outcome", async () => {
      await store.insertVerifications([
        verification({ keyId: "key_1", identityId: "id_1", externalId: "user_1", tags: ["a", "b"] }),
        verification({ keyId: "key_1", tags: ["b"], outcome: "EXPIRED" }),
        verification({ keyId: "key_2", identityId: "id_1", externalId: "user_1", tags: [] }),
      ]);
      const day = "2026-01-15T00:00:00.000Z";
      expect(table(await store.verifications(query({ groupBy: "key" })))).toEqual([
        `${day} key_1 EXPIRED 1`,
        `${day} key_1 VALID 1`,
        `${day} key_2 VALID 1`,
      ]);
      expect(table(await store.verifications(query({ groupBy: "identity" })))).toEqual([
        `${day} - EXPIRED 1`,
        `${day} id_1/user_1 VALID 2`,
      ]);
      expect(table(await store.verifications(query({ groupBy: "tag" })))).toEqual([
        `${day} a VALID 1`,
        `${day} b EXPIRED 1`,
        `${day} b VALID 1`,
      ]);
      expect(table(await store.verifications(query({ groupBy: "outcome" })))).toEqual([
        `${day} EXPIRED EXPIRED 1`,
        `${day} VALID VALID 2`,
      ]);
    });

    it("buckets by UTC hour, day and month over a long range with ragged edges", async () => {
      const times = [
        Date.UTC(2026, 0, 31, 23, 59, 59, 999),
        Date.UTC(2026, 1, 1, 0, 0),
        Date.UTC(2026, 1, 1, 0, 30),
        Date.UTC(2026, 1, 1, 5, 15),
        Date.UTC(2026, 1, 2, 12, 0),
        Date.UTC(2026, 1, 20, 8, 45, 10),
        Date.UTC(2026, 2, 1, 0, 0, 0, 1),
      ];
      await store.insertVerifications(times.map((time) => verification({ time })));
      const start = Date.UTC(2026, 0, 31, 23, 59, 59, 999);
      const end = Date.UTC(2026, 1, 20, 8, 45, 10, 1);
      expect(table(await store.verifications(query({ start, end, granularity: "month" })))).toEqual([
        "2026-01-01T00:00:00.000Z - VALID 1",
        "2026-02-01T00:00:00.000Z - VALID 5",
      ]);
      expect(table(await store.verifications(query({ start, end, granularity: "day" })))).toEqual([
        "2026-01-31T00:00:00.000Z - VALID 1",
        "2026-02-01T00:00:00.000Z - VALID 3",
        "2026-02-02T00:00:00.000Z - VALID 1",
        "2026-02-20T00:00:00.000Z - VALID 1",
      ]);
      expect(table(await store.verifications(query({ start, end, granularity: "hour" })))).toEqual([
        "2026-01-31T23:00:00.000Z - VALID 1",
        "2026-02-01T00:00:00.000Z - VALID 2",
        "2026-02-01T05:00:00.000Z - VALID 1",
        "2026-02-02T12:00:00.000Z - VALID 1",
        "2026-02-20T08:00:00.000Z - VALID 1",
      ]);
      expect(total(await store.verifications(query({ start: start + 1, end: end - 1 })))).toBe(4);
    });

    it("answers its ping", async () => {
      expect(await store.ping()).toBe(true);
    });
  });
}
