import { TestClock } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import type { CachedKey } from "../store/keys-store.ts";
import { KeyCache, lookupTogether } from "./key-cache.ts";

const WS = "ws_1";
const keyWithHash = (hash: string, workspaceId = WS): CachedKey => ({
  id: `key_${hash}`,
  workspaceId,
  apiId: "api_1",
  hash,
  name: null,
  metaJson: null,
  externalId: null,
  identityId: null,
  permissions: [],
  roles: [],
  expires: null,
  enabled: true,
  remaining: null,
  deletedAt: null,
  ratelimits: [],
  apiDeleted: false,
});

function counting(found: (hash: string, workspaceId: string) => CachedKey | undefined) {
  const calls: string[] = [];
  let release: () => void = () => {};
  let gate: Promise<void> | undefined;
  return {
    calls,
    hold() {
      gate = new Promise((r) => {
        release = r;
      });
    },
    release: () => release(),
    load: async (workspaceId: string, hash: string) => {
      calls.push(workspaceId === WS ? hash : `${workspaceId}/${hash}`);
      if (gate) await gate;
      return found(hash, workspaceId);
    },
  };
}

describe("KeyCache", () => {
  it("remembers misses as well as hits", async () => {
    const store = counting((h) => (h === "known" ? keyWithHash(h) : undefined));
    const cache = new KeyCache(store.load, new TestClock());
    expect((await cache.get(WS, "known"))?.id).toBe("key_known");
    expect(await cache.get(WS, "unknown")).toBeNull();
    expect((await cache.get(WS, "known"))?.id).toBe("key_known");
    expect(await cache.get(WS, "unknown")).toBeNull();
    expect(store.calls).toEqual(["known", "unknown"]);
  });

  it("loads once for concurrent lookups of the same hash", async () => {
    const store = counting(keyWithHash);
    const cache = new KeyCache(store.load, new TestClock());
    await Promise.all([cache.get(WS, "a"), cache.get(WS, "a"), cache.get(WS, "a")]);
    expect(store.calls).toEqual(["a"]);
  });

  it("evicts the least recently used entry beyond its bound", async () => {
    const store = counting(keyWithHash);
    const cache = new KeyCache(store.load, new TestClock(), { max: 2 });
    await cache.get(WS, "a");
    await cache.get(WS, "b");
    await cache.get(WS, "a");
    await cache.get(WS, "c");
    expect(cache.size).toBe(2);
    expect(cache.peek(WS, "b")).toBeUndefined();
    expect(cache.peek(WS, "a")?.id).toBe("key_a");
  });

  it("answers a hot key among 100,000 cached in well under 10 µs a hit, and keeps evicting the least recently used", async () => {
    const cache = new KeyCache(async (_, h) => keyWithHash(h), new TestClock(), { max: 100_000 });
    for (let i = 0; i < 100_000; i++) await cache.fetch(WS, `h${i}`);
    // 100,000 hits of one key: about 10 ms here; a Map re-ordered on every hit took 7 to 25 s.
    let found = 0;
    const started = performance.now();
    for (let i = 0; i < 100_000; i++) if (cache.peek(WS, "h7")?.id === "key_h7") found++;
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(found).toBe(100_000);
    await cache.fetch(WS, "new");
    expect(cache.size).toBe(100_000);
    expect(cache.peek(WS, "h0")).toBeUndefined();
    expect(cache.peek(WS, "h7")?.id).toBe("key_h7");
    expect(cache.peek(WS, "h1")?.id).toBe("key_h1");
  });

  it("drops one hash, or everything when invalidated without one", async () => {
    const store = counting(keyWithHash);
    const cache = new KeyCache(store.load, new TestClock());
    await cache.get(WS, "a");
    await cache.get(WS, "b");
    cache.invalidate({ workspaceId: WS, hash: "a" });
    expect(cache.peek(WS, "a")).toBeUndefined();
    expect(cache.peek(WS, "b")?.id).toBe("key_b");
    cache.invalidate();
    expect(cache.size).toBe(0);
  });

  it("does not cache a load that an invalidation overtook", async () => {
    const store = counting(keyWithHash);
    const cache = new KeyCache(store.load, new TestClock());
    store.hold();
    const pending = cache.get(WS, "a");
    cache.invalidate({ workspaceId: WS, hash: "a" });
    store.release();
    await pending;
    expect(cache.peek(WS, "a")).toBeUndefined();
  });

  it("forgets an entry older than its TTL", async () => {
    const clock = new TestClock();
    const store = counting(keyWithHash);
    const cache = new KeyCache(store.load, clock, { ttlMs: 1000 });
    await cache.get(WS, "a");
    clock.advance(1001);
    expect(cache.peek(WS, "a")).toBeUndefined();
  });

  it("keeps one hash of two workspaces apart: each finds its own, a miss of one is not the other's", async () => {
    const store = counting((h, ws) => (ws === "ws_a" ? keyWithHash(h, ws) : undefined));
    const cache = new KeyCache(store.load, new TestClock());
    expect((await cache.get("ws_a", "h"))?.workspaceId).toBe("ws_a");
    expect(await cache.get("ws_b", "h")).toBeNull();
    expect(cache.peek("ws_a", "h")?.workspaceId).toBe("ws_a");
    expect(cache.peek("ws_b", "h")).toBeNull();
    expect(cache.peek("ws_c", "h")).toBeUndefined();
    cache.invalidate({ workspaceId: "ws_b", hash: "h" });
    expect(cache.peek("ws_b", "h")).toBeUndefined();
    expect(cache.peek("ws_a", "h")?.workspaceId).toBe("ws_a");
    expect(store.calls).toEqual(["ws_a/h", "ws_b/h"]);
  });

  it("keeps at most 8 workspaces of one hash, dropping the one cached longest ago", async () => {
    const cache = new KeyCache(async (ws, h) => keyWithHash(h, ws), new TestClock());
    for (let i = 0; i < 9; i++) await cache.fetch(`ws_${i}`, "h");
    expect(cache.peek("ws_0", "h")).toBeUndefined();
    for (let i = 1; i < 9; i++) expect(cache.peek(`ws_${i}`, "h")?.workspaceId).toBe(`ws_${i}`);
    expect(cache.size).toBe(1);
  });

  it("bounds its entries by bytes: keys with 1 MiB of meta each stay under maxBytes, least recently used evicted", async () => {
    const MiB = 1024 * 1024;
    const meta = `{"blob":"${"x".repeat(MiB)}"}`;
    const cache = new KeyCache(
      async (ws, h) => ({ ...keyWithHash(h, ws), metaJson: meta }),
      new TestClock(),
      { max: 100_000, maxBytes: 16 * MiB },
    );
    for (let i = 0; i < 100; i++) {
      await cache.fetch(WS, `h${i}`);
      // h0 is verified all along: the least recently used are the others.
      expect(cache.peek(WS, "h0")?.metaJson).toBe(meta);
      expect(cache.bytes).toBeLessThanOrEqual(16 * MiB);
    }
    // Each counts at least its meta's bytes: at most 16 such keys in 16 MiB, whatever their count bound.
    expect(cache.bytes).toBeGreaterThan(8 * MiB);
    expect(cache.size).toBeLessThanOrEqual(16);
    expect(cache.size).toBeGreaterThanOrEqual(2);
    expect(cache.peek(WS, "h99")?.metaJson).toBe(meta);
    expect(cache.peek(WS, "h1")).toBeUndefined();
    expect(cache.peek(WS, "h50")).toBeUndefined();
  });

  it("counts what is worked out later from a cached key (charge), and evicts to stay under maxBytes", async () => {
    const cache = new KeyCache(async (ws, h) => keyWithHash(h, ws), new TestClock(), {
      max: 100_000,
      maxBytes: 100_000,
    });
    const a = (await cache.fetch(WS, "a"))!;
    await cache.fetch(WS, "b");
    const before = cache.bytes;
    cache.charge(a, "segments", 10_000);
    expect(cache.bytes).toBe(before + 10_000);
    // A new answer for the same key replaces what was counted for it, it does not add to it.
    cache.charge(a, "segments", 4_000);
    expect(cache.bytes).toBe(before + 4_000);
    cache.charge(a, "grants", 1_000);
    expect(cache.bytes).toBe(before + 5_000);
    // Charged beyond the bound, the least recently used go first: b (a was charged, so used, since).
    const c = (await cache.fetch(WS, "c"))!;
    cache.charge(c, "segments", 100_000 - cache.bytes + 1);
    expect(cache.bytes).toBeLessThanOrEqual(100_000);
    expect(cache.peek(WS, "b")).toBeUndefined();
    expect(cache.peek(WS, "a")).toBe(a);
    expect(cache.peek(WS, "c")).toBe(c);
    // One entry larger than the whole bound is not kept at all.
    cache.charge(c, "segments", 100_000);
    expect(cache.peek(WS, "c")).toBeUndefined();
    // A key no longer cached is charged nothing.
    cache.invalidate();
    cache.charge(a, "segments", 1);
    expect(cache.bytes).toBe(0);
  });
});

describe("lookupTogether", () => {
  it("looks up the misses that arrive together in one query and answers each its own", async () => {
    const queries: (readonly string[])[] = [];
    const lookup = lookupTogether(async (lookups) => {
      queries.push(lookups.map((l) => `${l.workspaceId}/${l.hash}`));
      return lookups.filter((l) => l.hash !== "unknown").map((l) => keyWithHash(l.hash, l.workspaceId));
    });
    const cache = new KeyCache(lookup, new TestClock());
    const found = await Promise.all(
      [
        [WS, "a"],
        [WS, "b"],
        [WS, "unknown"],
        [WS, "a"],
        ["ws_2", "a"],
      ].map(([ws, h]) => cache.get(ws!, h!)),
    );
    expect(found.map((k) => (k ? `${k.workspaceId}/${k.hash}` : null))).toEqual([
      "ws_1/a",
      "ws_1/b",
      null,
      "ws_1/a",
      "ws_2/a",
    ]);
    expect(queries).toEqual([["ws_1/a", "ws_1/b", "ws_1/unknown", "ws_2/a"]]);
  });

  it("splits a large set of misses into queries of at most maxBatch hashes", async () => {
    const queries: (readonly string[])[] = [];
    const lookup = lookupTogether(
      async (lookups) => {
        queries.push(lookups.map((l) => l.hash));
        return lookups.map((l) => keyWithHash(l.hash));
      },
      { maxBatch: 2, maxInFlight: 1 },
    );
    const found = await Promise.all(["a", "b", "c", "d", "e"].map((h) => lookup(WS, h)));
    expect(found.map((k) => k?.hash)).toEqual(["a", "b", "c", "d", "e"]);
    expect(queries).toEqual([["a", "b"], ["c", "d"], ["e"]]);
  });

  it("fails every lookup of a failed query", async () => {
    const lookup = lookupTogether(async () => {
      throw new Error("database down");
    });
    const outcomes = await Promise.allSettled([lookup(WS, "a"), lookup(WS, "b")]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected"]);
  });
});
