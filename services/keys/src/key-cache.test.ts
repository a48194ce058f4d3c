import { TestClock } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { KeyCache, lookupTogether } from "./key-cache.ts";
import type { VerifiableKey } from "./store/keys-store.ts";

const keyWithHash = (hash: string) => ({ id: `key_${hash}`, hash }) as VerifiableKey;

function counting(found: (hash: string) => VerifiableKey | undefined) {
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
    load: async (hash: string) => {
      calls.push(hash);
      if (gate) await gate;
      return found(hash);
    },
  };
}

describe("KeyCache", () => {
  it("remembers misses as well as hits", async () => {
    const store = counting((h) => (h === "known" ? keyWithHash(h) : undefined));
    const cache = new KeyCache(store.load, new TestClock());
    expect((await cache.get("known"))?.id).toBe("key_known");
    expect(await cache.get("unknown")).toBeNull();
    expect((await cache.get("known"))?.id).toBe("key_known");
    expect(await cache.get("unknown")).toBeNull();
    expect(store.calls).toEqual(["known", "unknown"]);
  });

  it("loads once for concurrent lookups of the same hash", async () => {
    const store = counting(keyWithHash);
    const cache = new KeyCache(store.load, new TestClock());
    await Promise.all([cache.get("a"), cache.get("a"), cache.get("a")]);
    expect(store.calls).toEqual(["a"]);
  });

  it("evicts the least recently used entry beyond its bound", async () => {
    const store = counting(keyWithHash);
    const cache = new KeyCache(store.load, new TestClock(), { max: 2 });
    await cache.get("a");
    await cache.get("b");
    await cache.get("a");
    await cache.get("c");
    expect(cache.size).toBe(2);
    expect(cache.peek("b")).toBeUndefined();
    expect(cache.peek("a")?.id).toBe("key_a");
  });

  it("answers a hot key among 100,000 cached in well under 10 µs a hit, and keeps evicting the least recently used", async () => {
    const cache = new KeyCache(async (h) => keyWithHash(h), new TestClock(), { max: 100_000 });
    for (let i = 0; i < 100_000; i++) await cache.fetch(`h${i}`);
    // 100,000 hits of one key: about 10 ms here; a Map re-ordered on every hit took 7 to 25 s.
    let found = 0;
    const started = performance.now();
    for (let i = 0; i < 100_000; i++) if (cache.peek("h7")?.id === "key_h7") found++;
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(found).toBe(100_000);
    await cache.fetch("new");
    expect(cache.size).toBe(100_000);
    expect(cache.peek("h0")).toBeUndefined();
    expect(cache.peek("h7")?.id).toBe("key_h7");
    expect(cache.peek("h1")?.id).toBe("key_h1");
  });

  it("drops one hash, or everything when invalidated without one", async () => {
    const store = counting(keyWithHash);
    const cache = new KeyCache(store.load, new TestClock());
    await cache.get("a");
    await cache.get("b");
    cache.invalidate("a");
    expect(cache.peek("a")).toBeUndefined();
    expect(cache.peek("b")?.id).toBe("key_b");
    cache.invalidate();
    expect(cache.size).toBe(0);
  });

  it("does not cache a load that an invalidation overtook", async () => {
    const store = counting(keyWithHash);
    const cache = new KeyCache(store.load, new TestClock());
    store.hold();
    const pending = cache.get("a");
    cache.invalidate("a");
    store.release();
    await pending;
    expect(cache.peek("a")).toBeUndefined();
  });

  it("forgets an entry older than its TTL", async () => {
    const clock = new TestClock();
    const store = counting(keyWithHash);
    const cache = new KeyCache(store.load, clock, { ttlMs: 1000 });
    await cache.get("a");
    clock.advance(1001);
    expect(cache.peek("a")).toBeUndefined();
  });
});

describe("lookupTogether", () => {
  it("looks up the misses that arrive together in one query and answers each its own", async () => {
    const queries: (readonly string[])[] = [];
    const lookup = lookupTogether(async (hashes) => {
      queries.push(hashes);
      return hashes.filter((h) => h !== "unknown").map(keyWithHash);
    });
    const cache = new KeyCache(lookup, new TestClock());
    const found = await Promise.all(["a", "b", "unknown", "a", "c"].map((h) => cache.get(h)));
    expect(found.map((k) => k?.hash ?? null)).toEqual(["a", "b", null, "a", "c"]);
    expect(queries).toEqual([["a", "b", "unknown", "c"]]);
  });

  it("splits a large set of misses into queries of at most maxBatch hashes", async () => {
    const queries: (readonly string[])[] = [];
    const lookup = lookupTogether(
      async (hashes) => {
        queries.push(hashes);
        return hashes.map(keyWithHash);
      },
      { maxBatch: 2, maxInFlight: 1 },
    );
    const found = await Promise.all(["a", "b", "c", "d", "e"].map(lookup));
    expect(found.map((k) => k?.hash)).toEqual(["a", "b", "c", "d", "e"]);
    expect(queries).toEqual([["a", "b"], ["c", "d"], ["e"]]);
  });

  it("fails every lookup of a failed query", async () => {
    const lookup = lookupTogether(async () => {
      throw new Error("database down");
    });
    const outcomes = await Promise.allSettled([lookup("a"), lookup("b")]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected"]);
  });
});
