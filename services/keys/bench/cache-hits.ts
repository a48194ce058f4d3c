import { randomBytes } from "node:crypto";
import { systemClock } from "@latchkey/runtime";
import type { CachedKey } from "../src/store/keys-store.ts";
import { KeyCache } from "../src/verify/key-cache.ts";

/**
 * What a key cache hit costs (KeyCache.peek, the first step of every
 * verification), in nanoseconds: the cache full with 100,000 keys spread over
 * one workspace and over 100, hit on one hot key and on keys at random. Each
 * case runs five rounds of a million hits and reports the fastest, so a busy
 * machine's pauses count less.
 *   npx tsx services/keys/bench/cache-hits.ts
 */

const KEYS = 100_000;
const HITS = 1_000_000;

function record(workspaceId: string, hash: string): CachedKey {
  return {
    id: `key_${randomBytes(12).toString("base64url")}`,
    workspaceId,
    apiId: "api_bench",
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
  };
}

async function filled(workspaces: number): Promise<{ cache: KeyCache; keys: [string, string][] }> {
  const cache = new KeyCache(async (ws, hash) => record(ws, hash), systemClock, { max: KEYS });
  const keys: [string, string][] = [];
  for (let i = 0; i < KEYS; i++) {
    const ws = `ws_bench_${i % workspaces}`;
    const hash = randomBytes(32).toString("base64");
    await cache.fetch(ws, hash);
    keys.push([ws, hash]);
  }
  return { cache, keys };
}

/** The fastest of five rounds, in ns per hit; each hit looks up a copy of the hash, as a verification's is new. */
function timed(cache: KeyCache, lookups: [string, string][]): number {
  // Fresh strings, as hashKey makes one per verification (its hash code computed on first use).
  const copies = lookups.map(([ws, h]) => [ws, `${h.slice(0, 1)}${h.slice(1)}`] as [string, string]);
  let best = Number.POSITIVE_INFINITY;
  let found = 0;
  for (let round = 0; round < 5; round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < HITS; i++) {
      const [ws, h] = copies[i % copies.length]!;
      if (cache.peek(ws, h) != null) found++;
    }
    best = Math.min(best, Number(process.hrtime.bigint() - started) / HITS);
  }
  if (found !== 5 * HITS) throw new Error(`expected every lookup to hit, ${found} did`);
  return best;
}

for (const workspaces of [1, 100]) {
  const { cache, keys } = await filled(workspaces);
  const hot = keys[KEYS >> 1]!;
  const random = Array.from({ length: 65_536 }, () => keys[Math.floor(Math.random() * KEYS)]!);
  process.stdout.write(
    `${KEYS} keys in ${String(workspaces).padStart(3)} workspace(s): ` +
      `hot key ${timed(cache, [hot]).toFixed(0)} ns/hit, random keys ${timed(cache, random).toFixed(0)} ns/hit\n`,
  );
}
