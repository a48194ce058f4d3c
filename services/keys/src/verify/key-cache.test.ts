import { ErrorReason, errorDetailOf, TestClock } from "@latchkey/runtime";
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

  it("caches one hash for at most 8 workspaces: a 9th is looked up each time rather than push one out", async () => {
    const store = counting((h, ws) => keyWithHash(h, ws));
    const cache = new KeyCache(store.load, new TestClock());
    for (let i = 0; i < 9; i++) await cache.fetch(`ws_${i}`, "h");
    for (let i = 0; i < 8; i++) expect(cache.peek(`ws_${i}`, "h")?.workspaceId).toBe(`ws_${i}`);
    expect(cache.peek("ws_8", "h")).toBeUndefined();
    expect((await cache.get("ws_8", "h"))?.workspaceId).toBe("ws_8");
    expect(store.calls.filter((c) => c === "ws_8/h")).toHaveLength(2);
    expect(cache.size).toBe(1);
    // One of the 8 gone, the 9th is cached in its place.
    cache.invalidate({ workspaceId: "ws_3", hash: "h" });
    await cache.get("ws_8", "h");
    expect(cache.peek("ws_8", "h")?.workspaceId).toBe("ws_8");
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

/** A store whose lookups are counted per workspace; `found` decides what exists. */
function perWorkspace(found: (workspaceId: string, hash: string) => CachedKey | undefined) {
  const lookups = new Map<string, number>();
  let gate: Promise<void> | undefined;
  let release: () => void = () => {};
  return {
    lookups: (ws: string) => lookups.get(ws) ?? 0,
    hold() {
      gate = new Promise((r) => {
        release = r;
      });
    },
    release: () => {
      gate = undefined;
      release();
    },
    load: async (workspaceId: string, hash: string) => {
      lookups.set(workspaceId, (lookups.get(workspaceId) ?? 0) + 1);
      if (gate) await gate;
      return found(workspaceId, hash);
    },
  };
}

const VICTIM = "ws_victim";
const ATTACKER = "ws_attacker";

describe("KeyCache, shared by workspaces", () => {
  /** The victim's keys and misses, all verified once (the warm-up), then every `check`. */
  async function victimVerifies(cache: KeyCache) {
    const answers = await Promise.all([
      ...Array.from({ length: 1_000 }, (_, i) => cache.get(VICTIM, `v${i}`)),
      ...Array.from({ length: 50 }, (_, i) => cache.get(VICTIM, `wrong${i}`)),
    ]);
    expect(answers.filter((a) => a !== null)).toHaveLength(1_000);
  }

  it("a workspace verifying a million distinct random strings evicts none of another's keys or misses", async () => {
    const store = perWorkspace((ws, h) =>
      ws === VICTIM && h.startsWith("v") ? keyWithHash(h, ws) : undefined,
    );
    const cache = new KeyCache(store.load, new TestClock(), { max: 10_000 });
    await victimVerifies(cache);
    expect(store.lookups(VICTIM)).toBe(1_050);
    for (let sent = 0; sent < 1_000_000; sent += 1_000) {
      await Promise.all(Array.from({ length: 1_000 }, (_, i) => cache.get(ATTACKER, `r${sent + i}`)));
      if (sent % 100_000 === 0) await victimVerifies(cache);
    }
    await victimVerifies(cache);
    // Not one lookup of the victim's since the warm-up: its keys and its misses stayed cached.
    expect(store.lookups(VICTIM)).toBe(1_050);
    expect(store.lookups(ATTACKER)).toBe(1_000_000);
    // The misses' own room: a tenth of max, the victim's 50 and the attacker's rest.
    expect(cache.held(ATTACKER)).toMatchObject({ keys: 0, misses: 1_000 - 50 });
    expect(cache.held(VICTIM)).toMatchObject({ keys: 1_000, misses: 50 });
  });

  it("a workspace's own misses never push out its found keys", async () => {
    const store = perWorkspace((ws, h) => (h.startsWith("v") ? keyWithHash(h, ws) : undefined));
    const cache = new KeyCache(store.load, new TestClock(), { max: 2_000 });
    await Promise.all(Array.from({ length: 1_000 }, (_, i) => cache.get(VICTIM, `v${i}`)));
    for (let sent = 0; sent < 100_000; sent += 1_000) {
      await Promise.all(Array.from({ length: 1_000 }, (_, i) => cache.get(VICTIM, `r${sent + i}`)));
    }
    await Promise.all(Array.from({ length: 1_000 }, (_, i) => cache.get(VICTIM, `v${i}`)));
    expect(store.lookups(VICTIM)).toBe(101_000);
    expect(cache.held(VICTIM)).toMatchObject({ keys: 1_000, misses: 200 });
  });

  it("a workspace caching far more keys than its share evicts only its own, and uses the room no one else needs", async () => {
    const store = perWorkspace((ws, h) => (h.startsWith("wrong") ? undefined : keyWithHash(h, ws)));
    const cache = new KeyCache(store.load, new TestClock(), { max: 10_000 });
    await victimVerifies(cache);
    for (let sent = 0; sent < 200_000; sent += 1_000) {
      await Promise.all(Array.from({ length: 1_000 }, (_, i) => cache.get(ATTACKER, `a${sent + i}`)));
      if (sent % 20_000 === 0) await victimVerifies(cache);
    }
    await victimVerifies(cache);
    expect(store.lookups(VICTIM)).toBe(1_050);
    // Above its share (half of 10,000) it makes room from its own: it holds what the victim leaves.
    expect(cache.held(ATTACKER).keys).toBe(9_000);
    expect(cache.held(VICTIM).keys).toBe(1_000);
  });

  it("a workspace with large keys evicts none of another's by bytes, and the bound on bytes holds", async () => {
    const MiB = 1024 * 1024;
    const meta = `{"blob":"${"x".repeat(64 * 1024)}"}`;
    const store = perWorkspace((ws, h) =>
      h.startsWith("wrong") ? undefined : { ...keyWithHash(h, ws), metaJson: ws === ATTACKER ? meta : null },
    );
    const cache = new KeyCache(store.load, new TestClock(), { max: 100_000, maxBytes: 16 * MiB });
    await victimVerifies(cache);
    for (let i = 0; i < 2_000; i++) {
      await cache.get(ATTACKER, `a${i}`);
      // Found keys within maxBytes, the victim's misses in their own room of a sixteenth more.
      expect(cache.bytes).toBeLessThanOrEqual(17 * MiB);
      if (i % 200 === 0) await victimVerifies(cache);
    }
    await victimVerifies(cache);
    expect(store.lookups(VICTIM)).toBe(1_050);
    // 128 KiB and more counted each: 16 MiB less the victim's 1 MiB hold about a hundred and twenty.
    expect(cache.held(ATTACKER).keys).toBeGreaterThan(50);
    expect(cache.held(ATTACKER).keys).toBeLessThan(128);
  });

  it("gives a workspace within its share room from the workspace furthest above it", async () => {
    const store = perWorkspace((ws, h) => keyWithHash(h, ws));
    const cache = new KeyCache(store.load, new TestClock(), { max: 10_000 });
    const fill = async (ws: string, count: number) => {
      for (let i = 0; i < count; i += 500) {
        await Promise.all(Array.from({ length: 500 }, (_, j) => cache.get(ws, `${ws}${i + j}`)));
      }
    };
    await fill("ws_a", 10_000);
    expect(cache.held("ws_a").keys).toBe(10_000);
    await fill("ws_b", 3_000);
    expect([cache.held("ws_a").keys, cache.held("ws_b").keys]).toEqual([7_000, 3_000]);
    // Three workspaces: a share of 3,333. C takes from A, furthest above; B, within its share, keeps all.
    await fill("ws_c", 4_000);
    expect([cache.held("ws_a").keys, cache.held("ws_b").keys, cache.held("ws_c").keys]).toEqual([
      3_667, 3_000, 3_333,
    ]);
    // What A and B hold are their most recently cached.
    expect(cache.peek("ws_a", "ws_a9999")?.id).toBe("key_ws_a9999");
    expect(cache.peek("ws_a", "ws_a6332")).toBeUndefined();
  });

  it("drops one workspace's entries on an invalidation naming only it, and no other's", async () => {
    const store = perWorkspace((ws, h) => (h.startsWith("v") ? keyWithHash(h, ws) : undefined));
    const cache = new KeyCache(store.load, new TestClock());
    for (const ws of [VICTIM, ATTACKER]) {
      await Promise.all(Array.from({ length: 100 }, (_, i) => cache.get(ws, `v${i}`)));
      await cache.get(ws, "wrong");
    }
    store.hold();
    const pending = [cache.get(VICTIM, "v100"), cache.get(ATTACKER, "v100")];
    cache.invalidate({ workspaceId: ATTACKER });
    store.release();
    await Promise.all(pending);
    expect(cache.held(ATTACKER)).toEqual({ keys: 0, misses: 0, bytes: 0 });
    expect(cache.peek(ATTACKER, "v0")).toBeUndefined();
    expect(cache.peek(ATTACKER, "v100")).toBeUndefined();
    // The victim's entries stay, and its lookup under way is cached: the invalidation was not of it.
    expect(cache.held(VICTIM)).toMatchObject({ keys: 101, misses: 1 });
    expect(cache.peek(VICTIM, "v100")?.id).toBe("key_v100");
    expect(cache.size).toBe(102);
  });

  it("caches a lookup under way when another workspace's key is invalidated meanwhile", async () => {
    const store = perWorkspace((ws, h) => keyWithHash(h, ws));
    const cache = new KeyCache(store.load, new TestClock());
    store.hold();
    const pending = cache.get(VICTIM, "v");
    // Another workspace changing its keys all the while must not keep the victim's lookups from being cached.
    for (let i = 0; i < 100; i++) cache.invalidate({ workspaceId: ATTACKER, hash: `a${i}` });
    cache.invalidate({ workspaceId: ATTACKER });
    store.release();
    await pending;
    expect(cache.peek(VICTIM, "v")?.id).toBe("key_v");
  });

  it("looks up at most maxLookupsPerWorkspace keys of one workspace at once: past it UNAVAILABLE, others unaffected", async () => {
    const store = perWorkspace((ws, h) => keyWithHash(h, ws));
    const cache = new KeyCache(store.load, new TestClock(), { maxLookupsPerWorkspace: 100 });
    store.hold();
    const flood = Array.from({ length: 100 }, (_, i) => cache.get(ATTACKER, `a${i}`));
    // The same key again joins its lookup under way rather than counting twice.
    const again = cache.get(ATTACKER, "a0");
    const refused = await cache.get(ATTACKER, "a100").catch((err: unknown) => err);
    expect(errorDetailOf(refused)?.reason).toBe(ErrorReason.UNAVAILABLE);
    const victim = cache.get(VICTIM, "v");
    store.release();
    expect((await victim)?.id).toBe("key_v");
    expect((await Promise.all([...flood, again])).filter((k) => k !== null)).toHaveLength(101);
    expect(store.lookups(ATTACKER)).toBe(100);
    // Once answered, its lookups go again.
    expect((await cache.get(ATTACKER, "a100"))?.id).toBe("key_a100");
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
