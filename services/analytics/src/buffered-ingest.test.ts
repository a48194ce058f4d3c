import { create, toBinary } from "@bufbuild/protobuf";
import { KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { type Logger, LoopProgress } from "@latchkey/runtime";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { keyVerifiedType, ratelimitCheckedType } from "../testing/clickhouse.ts";
import { BufferedIngest } from "./buffered-ingest.ts";
import { decodeMessage, KEY_VERIFIED, RATELIMIT_CHECKED } from "./events.ts";
import type { AnalyticsStore, RatelimitCheck, Verification } from "./store/analytics-store.ts";

/**
 * Records each insert stored as [kind, request ids] and every call, stored or
 * not, as an attempt; fails the next `failures` inserts, and stores the next
 * `lostAnswers` but throws as if their answer were lost; `hold` keeps inserts
 * pending. Like PostgresAnalyticsStore it skips a batch id (per kind) it has
 * stored.
 */
class FakeStore implements AnalyticsStore {
  inserts: [string, string[]][] = [];
  attempts: { kind: string; requestIds: string[]; batchId: string | undefined }[] = [];
  failures = 0;
  lostAnswers = 0;
  private batchIds = new Set<string>();
  inFlight = 0;
  maxInFlight = 0;
  private held: (() => void)[] = [];
  hold = false;
  /** Each insert takes this long (a slow database). */
  delayMs = 0;

  insertVerifications(rows: readonly Verification[], batchId?: string) {
    return this.insert("verifications", rows, batchId);
  }
  insertRatelimits(rows: readonly RatelimitCheck[], batchId?: string) {
    return this.insert("ratelimits", rows, batchId);
  }
  async ratelimits() {
    return [];
  }

  async verifications() {
    return [];
  }
  async ping() {
    return true;
  }
  /** Lets the held inserts answer. */
  release() {
    for (const r of this.held.splice(0)) r();
  }
  /** Request ids stored, in order. */
  stored(kind = "verifications") {
    return this.inserts.filter(([k]) => k === kind).flatMap(([, ids]) => ids);
  }

  private async insert(
    kind: string,
    rows: readonly { requestId: string }[],
    batchId: string | undefined,
  ): Promise<number> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      this.attempts.push({ kind, requestIds: rows.map((r) => r.requestId), batchId });
      if (this.hold) await new Promise<void>((r) => this.held.push(r));
      if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
      if (this.failures > 0) {
        this.failures--;
        throw new Error("connection refused");
      }
      if (batchId !== undefined) {
        if (this.batchIds.has(`${kind}:${batchId}`)) return 0;
        this.batchIds.add(`${kind}:${batchId}`);
      }
      this.inserts.push([kind, rows.map((r) => r.requestId)]);
      if (this.lostAnswers > 0) {
        this.lostAnswers--;
        throw new Error("connection reset");
      }
      return rows.length;
    } finally {
      this.inFlight--;
    }
  }
}

const errors: string[] = [];
const log = {
  error: (_fields: unknown, message: string) => {
    errors.push(message);
  },
} as unknown as Logger;

let n = 0;
const verified = (workspaceId = "ws_1") => {
  const requestId = `req_${++n}`;
  return [keyVerifiedType, requestId, create(KeyVerifiedSchema, { requestId, workspaceId })] as const;
};
const checked = (workspaceId = "ws_1") => {
  const requestId = `req_${++n}`;
  return [
    ratelimitCheckedType,
    requestId,
    create(RatelimitCheckedSchema, { requestId, workspaceId }),
  ] as const;
};
/** `count` verifications, of the workspaces given in turn. */
const publishMany = (ingest: BufferedIngest, count: number, workspaces = ["ws_1"]) => {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const event = verified(workspaces[i % workspaces.length]);
    ingest.publish(...event);
    ids.push(event[1]);
  }
  return ids;
};
const sizes = (store: FakeStore) => store.inserts.map(([kind, ids]) => `${kind} ${ids.length}`);

let store: FakeStore;
beforeEach(() => {
  vi.useFakeTimers();
  store = new FakeStore();
  errors.length = 0;
});
afterEach(() => {
  vi.useRealTimers();
});

describe("BufferedIngest", () => {
  it("writes the events of one interval in one insert per kind, 100 ms after the first", async () => {
    const ingest = new BufferedIngest(store, log);
    const ids = publishMany(ingest, 250);
    const check = checked();
    ingest.publish(...check);
    await vi.advanceTimersByTimeAsync(99);
    expect(store.inserts).toEqual([]);
    expect(ingest.stats()).toEqual({ buffered: 251, published: 0, dropped: 0 });

    await vi.advanceTimersByTimeAsync(1);
    expect(sizes(store)).toEqual(["verifications 250", "ratelimits 1"]);
    expect(store.stored()).toEqual(ids);
    expect(store.stored("ratelimits")).toEqual([check[1]]);
    expect(ingest.stats()).toEqual({ buffered: 0, published: 251, dropped: 0 });

    // Nothing buffered, nothing written: no timer runs while idle.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(store.inserts).toHaveLength(2);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("writes at once when 1,000 rows wait, one insert in flight at a time, the rest at the interval", async () => {
    const ingest = new BufferedIngest(store, log);
    store.hold = true;
    const ids = publishMany(ingest, 2_500);
    await vi.advanceTimersByTimeAsync(0);
    expect(store.inFlight).toBe(1);

    // However long the insert takes, the next waits for it.
    await vi.advanceTimersByTimeAsync(500);
    expect(store.inFlight).toBe(1);
    store.hold = false;
    store.release();
    await vi.advanceTimersByTimeAsync(0);
    expect(sizes(store)).toEqual(["verifications 1000", "verifications 1000"]);

    await vi.advanceTimersByTimeAsync(99);
    expect(store.inserts).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(sizes(store)).toEqual(["verifications 1000", "verifications 1000", "verifications 500"]);
    expect(store.stored()).toEqual(ids);
    expect(store.maxInFlight).toBe(1);
  });

  it("retries a failed batch after each retry interval as the same rows under the same id", async () => {
    const ingest = new BufferedIngest(store, log, { retryMs: 1_000 });
    store.failures = 2;
    const first = publishMany(ingest, 10);
    const check = checked();
    ingest.publish(...check);
    await vi.advanceTimersByTimeAsync(100);
    expect(store.inserts).toEqual([]);
    expect(errors).toEqual(["analytics batch not stored: kept for a retry"]);

    await vi.advanceTimersByTimeAsync(999);
    expect(errors).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(errors).toHaveLength(2);
    expect(ingest.stats()).toEqual({ buffered: 11, published: 0, dropped: 0 });

    await vi.advanceTimersByTimeAsync(1_000);
    expect(store.stored()).toEqual(first);
    expect(store.stored("ratelimits")).toEqual([check[1]]);
    expect(ingest.stats()).toEqual({ buffered: 0, published: 11, dropped: 0 });
    const [attempt, ...retries] = store.attempts.filter((a) => a.kind === "verifications");
    expect(attempt).toEqual({ kind: "verifications", requestIds: first, batchId: expect.any(String) });
    expect(retries).toEqual([attempt, attempt]);
    // One batch: its rate-limit checks carry its id too (the store keeps ids per kind).
    expect(store.attempts.at(-1)).toEqual({
      kind: "ratelimits",
      requestIds: [check[1]],
      batchId: attempt?.batchId,
    });
  });

  it("does not merge events published during a failure into the retried batch: they follow in a batch of their own", async () => {
    const ingest = new BufferedIngest(store, log, { retryMs: 1_000 });
    store.failures = 1;
    const first = publishMany(ingest, 10);
    await vi.advanceTimersByTimeAsync(100);
    const later = publishMany(ingest, 5);

    await vi.advanceTimersByTimeAsync(1_000);
    expect(store.attempts.map((a) => a.requestIds)).toEqual([first, first]);
    expect(ingest.stats()).toEqual({ buffered: 5, published: 10, dropped: 0 });
    await vi.advanceTimersByTimeAsync(100);
    expect(store.attempts.map((a) => a.requestIds)).toEqual([first, first, later]);
    const ids = store.attempts.map((a) => a.batchId);
    expect(ids[0]).toBe(ids[1]);
    expect(ids[2]).not.toBe(ids[0]);
    expect(store.stored()).toEqual([...first, ...later]);
  });

  it("counts a batch once when its insert landed but the answer was lost: the retry repeats its id", async () => {
    const ingest = new BufferedIngest(store, log, { retryMs: 1_000 });
    store.lostAnswers = 1;
    const ids = publishMany(ingest, 10);
    await vi.advanceTimersByTimeAsync(100);
    expect(errors).toEqual(["analytics batch not stored: kept for a retry"]);
    expect(store.stored()).toEqual(ids);

    await vi.advanceTimersByTimeAsync(1_000);
    expect(store.attempts).toHaveLength(2);
    expect(store.attempts[1]).toEqual(store.attempts[0]);
    expect(store.stored()).toEqual(ids);
    expect(ingest.stats()).toEqual({ buffered: 0, published: 10, dropped: 0 });
  });

  it("tries a failing store once per retry interval however many events arrive meanwhile", async () => {
    const ingest = new BufferedIngest(store, log, { batchSize: 10, retryMs: 1_000 });
    store.failures = 1;
    const first = publishMany(ingest, 10);
    await vi.advanceTimersByTimeAsync(0);
    expect(errors).toHaveLength(1);
    const later = publishMany(ingest, 50);
    await vi.advanceTimersByTimeAsync(999);
    expect(errors).toHaveLength(1);
    expect(store.inserts).toEqual([]);

    await vi.advanceTimersByTimeAsync(1);
    expect(sizes(store)).toEqual(Array(6).fill("verifications 10"));
    expect(store.stored()).toEqual([...first, ...later]);
  });

  it("drops, counts and logs the events past its bound while the store fails, and takes events again once written", async () => {
    const ingest = new BufferedIngest(store, log, { maxBuffered: 5, retryMs: 1_000 });
    store.failures = 1;
    const kept = publishMany(ingest, 5, ["ws_1", "ws_2"]);
    publishMany(ingest, 3, ["ws_3"]);
    expect(ingest.stats()).toEqual({ buffered: 5, published: 0, dropped: 3 });
    // Logged once, not once per event.
    expect(errors).toEqual(["analytics buffer full: events dropped"]);

    await vi.advanceTimersByTimeAsync(100 + 1_000);
    expect(store.stored()).toEqual(kept);
    const after = publishMany(ingest, 2);
    await vi.advanceTimersByTimeAsync(100);
    expect(store.stored()).toEqual([...kept, ...after]);
    expect(ingest.stats()).toEqual({ buffered: 0, published: 7, dropped: 3 });
  });

  it("keeps half of its bound for other workspaces while one floods it and the store fails", async () => {
    const ingest = new BufferedIngest(store, log, { maxBuffered: 10, retryMs: 1_000 });
    store.failures = 1;
    const flood = publishMany(ingest, 20, ["ws_flood"]);
    const victim = publishMany(ingest, 5, ["ws_victim"]);
    expect(ingest.stats()).toEqual({ buffered: 10, published: 0, dropped: 15 });
    await vi.advanceTimersByTimeAsync(100 + 1_000);
    expect(store.stored()).toEqual([...flood.slice(0, 5), ...victim]);
    // Written, the flooding workspace has its half again.
    publishMany(ingest, 5, ["ws_flood"]);
    expect(ingest.stats()).toEqual({ buffered: 5, published: 10, dropped: 15 });
  });

  it("keeps half of its bound for other workspaces while one floods it with rate-limit checks and the store fails", async () => {
    const ingest = new BufferedIngest(store, log, { maxBuffered: 10, retryMs: 1_000 });
    store.failures = 1;
    const flood: string[] = [];
    for (let i = 0; i < 20; i++) {
      const event = checked("ws_flood");
      ingest.publish(...event);
      flood.push(event[1]);
    }
    const victimCheck = checked("ws_victim");
    ingest.publish(...victimCheck);
    const victimVerifications = publishMany(ingest, 2, ["ws_victim"]);
    expect(ingest.stats()).toEqual({ buffered: 8, published: 0, dropped: 15 });
    await vi.advanceTimersByTimeAsync(100 + 1_000);
    expect(store.stored("ratelimits")).toEqual([...flood.slice(0, 5), victimCheck[1]]);
    expect(store.stored("verifications")).toEqual(victimVerifications);
  });

  it("writes what is buffered on close, before the interval, and drops (counted, logged) events published after", async () => {
    const ingest = new BufferedIngest(store, log);
    const ids = publishMany(ingest, 3);
    await ingest.close();
    expect(store.stored()).toEqual(ids);
    expect(vi.getTimerCount()).toBe(0);

    publishMany(ingest, 1);
    expect(ingest.stats()).toEqual({ buffered: 0, published: 3, dropped: 1 });
    expect(errors).toEqual(["analytics ingest closed: events dropped"]);
  });

  it("retries on close until its timeout, then counts and logs what it could not write", async () => {
    const ingest = new BufferedIngest(store, log, { retryMs: 500 });
    store.failures = Number.POSITIVE_INFINITY;
    publishMany(ingest, 3);
    const closing = ingest.close(2_000);
    await vi.advanceTimersByTimeAsync(2_000);
    await closing;
    expect(errors.filter((e) => e === "analytics batch not stored: kept for a retry")).toHaveLength(4);
    expect(errors.at(-1)).toBe("analytics events not stored before shutdown: dropped");
    expect(ingest.stats()).toEqual({ buffered: 0, published: 0, dropped: 3 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("works through a backlog of 50,000 events while the store is slow and briefly down: counts move, the loop's mark advances, nothing is lost", async () => {
    const progress = new LoopProgress("analytics.ingest.test");
    const ingest = new BufferedIngest(store, log, { progress });
    store.delayMs = 50;
    store.failures = 3;
    const ids = publishMany(ingest, 50_000);
    expect(ingest.stats()).toEqual({ buffered: 50_000, published: 0, dropped: 0 });

    // Down: three failed attempts, a second apart; nothing stored, no progress.
    await vi.advanceTimersByTimeAsync(2_500);
    expect(store.attempts).toHaveLength(3);
    expect(store.stored()).toHaveLength(0);
    expect(progress.marks).toBe(0);

    // Back, and slow: 50 ms a batch of 1,000. Every second about 20 batches move, and each marks.
    const seen: { stored: number; marks: number; at: number }[] = [];
    for (let second = 0; second < 3; second++) {
      await vi.advanceTimersByTimeAsync(1_000);
      seen.push({ stored: store.stored().length, marks: progress.marks, at: progress.lastAt });
    }
    for (let i = 1; i < seen.length; i++) {
      const [before, after] = [seen[i - 1]!, seen[i]!];
      expect(after.stored - before.stored).toBeGreaterThanOrEqual(15_000);
      expect(after.marks - before.marks).toBeGreaterThanOrEqual(15);
      expect(after.at).toBeGreaterThan(before.at);
    }

    await vi.advanceTimersByTimeAsync(5_000);
    expect(store.stored()).toEqual(ids);
    expect(ingest.stats()).toEqual({ buffered: 0, published: 50_000, dropped: 0 });
    expect(progress.marks).toBe(50);
  });

  it("ignores subjects it does not count", async () => {
    const ingest = new BufferedIngest(store, log);
    ingest.publish(
      { subject: "events.something.else", encode: (m) => toBinary(KeyVerifiedSchema, m) },
      "req_other",
      create(KeyVerifiedSchema),
    );
    expect(errors).toEqual([]);
    expect(ingest.stats()).toEqual({ buffered: 0, published: 0, dropped: 0 });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("BufferedIngest in process (messages, no bytes)", () => {
  /** A store that keeps every row it is given, by kind. */
  const keeping = () => {
    const rows: { verifications: Verification[]; ratelimits: RatelimitCheck[] } = {
      verifications: [],
      ratelimits: [],
    };
    const kept: AnalyticsStore = {
      insertVerifications: async (r) => rows.verifications.push(...r),
      insertRatelimits: async (r) => rows.ratelimits.push(...r),
      verifications: async () => [],
      ratelimits: async () => [],
      ping: async () => true,
    };
    return { kept, rows };
  };

  it("stores the rows the consumer stores for the same events' bytes", async () => {
    const verification = {
      requestId: "req_f",
      time: 1_767_225_600_123,
      workspaceId: "ws_1",
      apiId: "api_1",
      keyId: "key_1",
      identityId: "id_1",
      externalId: "user_ü",
      outcome: "USAGE_EXCEEDED",
      tags: ["a", "b", "a"],
      spentCredits: 3,
      latency: 0.5,
    };
    const check = {
      requestId: "req_r",
      index: 1,
      time: 1_767_225_600_456,
      workspaceId: "ws_1",
      namespaceId: "ns_1",
      identifier: "user_1",
      passed: false,
      limit: 10,
      remaining: 0,
      reset: 1_767_225_660_000,
      cost: 2,
      overrideId: "ovr_1",
      latency: 0.25,
    };
    const verifiedMessage = create(KeyVerifiedSchema, {
      ...verification,
      time: BigInt(verification.time),
      spentCredits: 3n,
    });
    const checkedMessage = create(RatelimitCheckedSchema, {
      ...check,
      time: BigInt(check.time),
      limit: 10n,
      remaining: 0n,
      reset: BigInt(check.reset),
      cost: 2n,
    });
    // What the consumer stores for the events' bytes (decodeMessage is its decoder).
    const bytes = {
      rows: {
        verifications: decodeMessage(
          KEY_VERIFIED,
          "req_f:key_1",
          toBinary(KeyVerifiedSchema, verifiedMessage),
          false,
        ).map((e) => (e.kind === "verification" ? e.row : undefined)),
        ratelimits: decodeMessage(
          RATELIMIT_CHECKED,
          "req_r:1",
          toBinary(RatelimitCheckedSchema, checkedMessage),
          false,
        ).map((e) => (e.kind === "ratelimit" ? e.row : undefined)),
      },
    };
    const fields = keeping();
    const byFields = new BufferedIngest(fields.kept, log);
    byFields.publish(keyVerifiedType, "req_f:key_1", verifiedMessage);
    byFields.publish(ratelimitCheckedType, "req_r:1", checkedMessage);
    await byFields.flush();

    expect(fields.rows).toEqual(bytes.rows);
    expect(fields.rows.verifications).toEqual([{ ...verification, tags: ["a", "b"] }]);
    // A check's row has no index: its message id, the row's request id, tells the checks of one request apart.
    const { index: _index, ...row } = check;
    expect(fields.rows.ratelimits).toEqual([{ ...row, requestId: "req_r:1" }]);
    expect(byFields.stats()).toEqual({ buffered: 0, published: 2, dropped: 0 });
  });
});
