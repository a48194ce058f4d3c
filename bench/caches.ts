import { execFileSync } from "node:child_process";
import { OldestFirst } from "@latchkey/runtime";
import { LRUCache } from "lru-cache";

/**
 * The runtime's bounded maps (a Map with OldestFirst dropping the oldest, as gateway/src/auth.ts,
 * packages/runtime/src/internal-auth.ts, services/ratelimit's namespaces, overrides and exceeded
 * memos and services/keys' credit events and permission queries keep them) against lru-cache, at
 * the sizes their limits allow, in one process, rounds interleaved:
 *
 * - a hit on one hot key, and on keys at random, among `max` entries (get, and lru-cache's peek,
 *   which leaves the order of use alone as the Map's insertion order does);
 * - an insert of a new key into a full cache, the oldest dropped;
 * - an expiring entry (the gateway's unknown tokens: the Map holds the expiry as its value;
 *   lru-cache's `ttl`), hit and inserted;
 * - entries bounded by bytes as well as count (the exceeded memo: a running sum beside the Map;
 *   lru-cache's `maxSize` and `sizeCalculation`), inserted;
 * - the memory a full cache holds, apart from its keys and values (shared by both), and an empty one.
 *
 * `node --expose-gc --import tsx bench/caches.ts` (ROUNDS: 5; OPS: 2,000,000 per measurement).
 * Prints the fastest round of each, in ns per operation.
 */
const ROUNDS = Number(process.env["ROUNDS"] ?? 5);
const OPS = Number(process.env["OPS"] ?? 2_000_000);
const SIZES = (process.env["SIZES"] ?? "1000,10000,100000").split(",").map(Number);

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc");

/** Keys shaped as the caches' are: a 43-character base64url hash (root keys, tokens) or longer. */
function keysOf(n: number, prefix: string): string[] {
  const keys: string[] = new Array(n);
  for (let i = 0; i < n; i++) keys[i] = `${prefix}${i.toString(36).padStart(8, "0")}${"x".repeat(32)}`;
  return keys;
}

/** A fixed random sequence of indexes below n (xorshift), so every variant reads the same keys. */
function indexesOf(n: number, count: number): Uint32Array {
  const out = new Uint32Array(count);
  let x = 2463534242;
  for (let i = 0; i < count; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = (x >>> 0) % n;
  }
  return out;
}

interface Bounded {
  get(key: string): unknown;
  /** Inserts a key not held, dropping the oldest past the bound. */
  add(key: string, value: unknown): void;
}

/** As the runtime's caches do it: get, and trim before set. */
function fifo(max: number): Bounded {
  const map = new Map<string, unknown>();
  const oldest = new OldestFirst(map);
  return {
    get: (key) => map.get(key),
    add(key, value) {
      oldest.trim(max - 1);
      map.set(key, value);
    },
  };
}

function lru(max: number, read: "get" | "peek"): Bounded {
  const cache = new LRUCache<string, object>({ max });
  return {
    get: read === "get" ? (key) => cache.get(key) : (key) => cache.peek(key),
    add: (key, value) => {
      cache.set(key, value as object);
    },
  };
}

/** The gateway's unknown tokens: the expiry as the value, checked on read. */
function fifoExpiring(max: number, ttlMs: number): Bounded {
  const map = new Map<string, number>();
  const oldest = new OldestFirst(map);
  return {
    get(key) {
      const until = map.get(key);
      return until !== undefined && until > Date.now() ? true : undefined;
    },
    add(key) {
      oldest.trim(max - 1);
      map.delete(key);
      map.set(key, Date.now() + ttlMs);
    },
  };
}

function lruExpiring(max: number, ttlMs: number): Bounded {
  const cache = new LRUCache<string, true>({ max, ttl: ttlMs, ttlAutopurge: false });
  return {
    get: (key) => cache.get(key),
    add: (key) => {
      cache.set(key, true);
    },
  };
}

/** The exceeded memo: count and bytes, the oldest dropped while either is over. */
function fifoSized(max: number, maxBytes: number): Bounded {
  const map = new Map<string, number>();
  const oldest = new OldestFirst(map);
  let held = 0;
  return {
    get: (key) => map.get(key),
    add(key, value) {
      map.set(key, value as number);
      held += 150 + key.length * 2;
      while (map.size > max || held > maxBytes) {
        const k = oldest.next();
        if (k === undefined) break;
        map.delete(k);
        held -= 150 + k.length * 2;
      }
    },
  };
}

function lruSized(max: number, maxBytes: number): Bounded {
  const cache = new LRUCache<string, number>({
    max,
    maxSize: maxBytes,
    sizeCalculation: (_v, key) => 150 + key.length * 2,
  });
  return {
    get: (key) => cache.get(key),
    add: (key, value) => {
      cache.set(key, value as number);
    },
  };
}

let sink = 0;

/** ns per operation of `op` run `count` times. */
function time(count: number, op: (i: number) => void): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < count; i++) op(i);
  return Number(process.hrtime.bigint() - started) / count;
}

interface Case {
  name: string;
  variants: [string, (max: number) => Bounded][];
  run(cache: Bounded, max: number, keys: string[], fresh: string[], random: Uint32Array): number;
}

const filled = (make: (max: number) => Bounded, max: number, keys: string[]) => {
  const cache = make(max);
  for (let i = 0; i < max; i++) cache.add(keys[i]!, { i });
  return cache;
};

const plain: [string, (max: number) => Bounded][] = [
  ["Map + OldestFirst", fifo],
  ["lru-cache get", (max) => lru(max, "get")],
  ["lru-cache peek", (max) => lru(max, "peek")],
];

const cases: Case[] = [
  {
    name: "hit, one hot key",
    variants: plain,
    run: (cache, max, keys) => {
      const hot = keys[max >> 1]!;
      return time(OPS, () => {
        if (cache.get(hot) !== undefined) sink++;
      });
    },
  },
  {
    name: "hit, keys at random",
    variants: plain,
    run: (cache, _max, keys, _fresh, random) =>
      time(OPS, (i) => {
        if (cache.get(keys[random[i]!]!) !== undefined) sink++;
      }),
  },
  {
    name: "insert into a full cache, the oldest dropped",
    variants: plain,
    run: (cache, _max, _keys, fresh) => time(fresh.length, (i) => cache.add(fresh[i]!, { i })),
  },
  {
    name: "expiring (60 s): hit at random",
    variants: [
      ["Map of expiries + OldestFirst", (max) => fifoExpiring(max, 60_000)],
      ["lru-cache ttl", (max) => lruExpiring(max, 60_000)],
    ],
    run: (cache, _max, keys, _fresh, random) =>
      time(OPS, (i) => {
        if (cache.get(keys[random[i]!]!) !== undefined) sink++;
      }),
  },
  {
    name: "expiring (60 s): insert into a full cache",
    variants: [
      ["Map of expiries + OldestFirst", (max) => fifoExpiring(max, 60_000)],
      ["lru-cache ttl", (max) => lruExpiring(max, 60_000)],
    ],
    run: (cache, _max, _keys, fresh) => time(fresh.length, (i) => cache.add(fresh[i]!, i)),
  },
  {
    name: "bounded by bytes too: insert into a full cache",
    variants: [
      ["Map + sum + OldestFirst", (max) => fifoSized(max, max * 200)],
      ["lru-cache maxSize", (max) => lruSized(max, max * 200)],
    ],
    run: (cache, _max, _keys, fresh) => time(fresh.length, (i) => cache.add(fresh[i]!, i)),
  },
];

/**
 * Bytes (heap and ArrayBuffers) a full cache of `max` holds beyond its keys and values, and an empty one's: in a
 * process of its own (MEMORY_OF="<variant>,<max>"), so nothing else's garbage is counted.
 */
/** The heap and the ArrayBuffers outside it (lru-cache keeps its order in typed arrays). */
const used = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

function memory(variant: number, max: number) {
  const keys = keysOf(max, "k");
  const values = keys.map((_, i) => ({ i }));
  gc!();
  const before = used();
  const cache = plain[variant]![1](max);
  gc!();
  const empty = used() - before;
  for (let i = 0; i < max; i++) cache.add(keys[i]!, values[i]!);
  gc!();
  const full = used() - before;
  sink += cache.get(keys[0]!) === undefined ? 0 : 1;
  return { empty, perEntry: (full - empty) / max };
}

function memoryOf(variant: number, max: number): { empty: number; perEntry: number } {
  const out = execFileSync(process.execPath, [...process.execArgv, process.argv[1]!], {
    env: { ...process.env, MEMORY_OF: `${variant},${max}` },
  });
  return JSON.parse(out.toString());
}

if (process.env["MEMORY_OF"]) {
  const [variant, max] = process.env["MEMORY_OF"].split(",").map(Number);
  process.stdout.write(JSON.stringify(memory(variant!, max!)));
  process.exit(0);
}

for (const max of SIZES) {
  const keys = keysOf(max, "k");
  const fresh = keysOf(Math.min(OPS, 4 * max + 200_000), "n");
  const random = indexesOf(max, OPS);
  process.stdout.write(`\n${max.toLocaleString("en")} entries\n`);
  for (const c of cases) {
    const best = new Map<string, number>();
    for (let r = 0; r < ROUNDS; r++) {
      // Interleaved, the order turning each round, so drift falls on every variant.
      const order = r % 2 === 0 ? c.variants : [...c.variants].reverse();
      for (const [name, make] of order) {
        const cache = filled(make, max, keys);
        const ns = c.run(cache, max, keys, fresh, random);
        best.set(name, Math.min(best.get(name) ?? Number.POSITIVE_INFINITY, ns));
      }
    }
    process.stdout.write(
      `  ${c.name.padEnd(46)} ${c.variants.map(([name]) => `${name} ${best.get(name)!.toFixed(0)} ns`).join(", ")}\n`,
    );
  }
  const heap = [0, 1].map((variant) => {
    const m = memoryOf(variant, max);
    return `${plain[variant]![0]} ${m.perEntry.toFixed(0)} B per entry (empty: ${(m.empty / 1024).toFixed(0)} KiB)`;
  });
  process.stdout.write(`  ${"memory, apart from keys and values".padEnd(46)} ${heap.join(", ")}\n`);
}
process.stdout.write(sink > 0 ? "" : "\n");
