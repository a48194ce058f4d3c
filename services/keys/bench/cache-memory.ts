import { randomBytes } from "node:crypto";
import type { VerifyKeyResponse } from "@latchkey/proto/keys/v1/keys_pb";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { systemClock } from "@latchkey/runtime";
import type { CachedKey } from "../src/store/keys-store.ts";
import { segmentsOf } from "../src/verify/batch-wire.ts";
import { KEY_CACHE_MAX_BYTES, KeyCache } from "../src/verify/key-cache.ts";

/**
 * What the key cache really holds per key, against what it counts
 * (KeyCache.bytes), for keys of a typical and of a large size; then the whole
 * process's memory once the cache is full of large keys under the default
 * KEY_CACHE_MAX_BYTES. Each cached key also gets its answer's pre-encoded
 * segments, as binary VerifyKeyBatch answers keep them (verify/memos.ts).
 * Run:
 *   node --expose-gc --import tsx services/keys/bench/cache-memory.ts
 */

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");

const MiB = 1024 * 1024;
const random = (bytes: number) => randomBytes(bytes).toString("base64url");

/** A record as PostgreSQL answers it: every string its own, as decoded from a row. */
function record(workspaceId: string, hash: string, meta: string | null): CachedKey {
  return {
    id: `key_${random(12)}`,
    workspaceId: `${workspaceId}`,
    apiId: `api_${random(12)}`,
    hash,
    name: `customer ${random(4)}`,
    metaJson: meta === null ? null : `{"blob":"${meta}","n":${Math.random()}}`,
    externalId: `user_${random(6)}`,
    identityId: null,
    permissions: [],
    roles: [],
    expires: null,
    enabled: true,
    remaining: 1000,
    deletedAt: null,
    ratelimits: [],
    apiDeleted: false,
  };
}

const kept = new WeakMap<CachedKey, unknown>();

/** The segments verification keeps per cached key, counted as answerSegments counts them. */
function encode(cache: KeyCache, key: CachedKey): void {
  const answer: VerifyKeyResponse = {
    $typeName: "keys.v1.VerifyKeyResponse",
    valid: true,
    code: VerifyCode.VALID,
    keyId: key.id,
    name: key.name ?? undefined,
    metaJson: key.metaJson ?? undefined,
    enabled: key.enabled,
    permissions: [],
    roles: [],
    ratelimits: [],
  };
  const segments = segmentsOf(answer);
  kept.set(key, { segments });
  cache.charge(key, "segments", 320 + segments.before.byteLength + segments.after.byteLength);
}

function memory() {
  gc!();
  gc!();
  const m = process.memoryUsage();
  return { heap: m.heapUsed + m.arrayBuffers, rss: m.rss };
}

async function fill(cache: KeyCache, count: number, metaChars: number | null, from = 0): Promise<void> {
  const meta = metaChars === null ? null : "x".repeat(metaChars);
  for (let i = from; i < from + count; i++) {
    const hash = randomBytes(32).toString("base64");
    const key = await cache.fetch("ws_bench_workspace", hash);
    if (key) encode(cache, key);
    // The meta strings of the records are distinct copies, as rows decoded one by one are.
    if (meta !== null && i % 1000 === 999) gc!();
  }
}

/** One scenario in a fresh process, so each measures from the same baseline. */
async function scenario(name: string): Promise<void> {
  const [count, metaChars, maxBytes] = SCENARIOS[name]!;
  const cache = new KeyCache(
    async (ws, hash) => record(ws, hash, metaChars === null ? null : "x".repeat(metaChars)),
    systemClock,
    { max: Math.min(count, 100_000), maxBytes },
  );
  const before = memory();
  await fill(cache, count, metaChars);
  const after = memory();
  const held = (after.heap - before.heap) / cache.size;
  const counted = cache.bytes / cache.size;
  process.stdout.write(
    `${name.padEnd(28)} ${String(count).padStart(7)} verified, ${String(cache.size).padStart(6)} kept: ` +
      `held ${(held / 1024).toFixed(2)} KiB/key, counted ${(counted / 1024).toFixed(2)} KiB/key ` +
      `(counted/held ${(counted / held).toFixed(2)}); counted ${(cache.bytes / MiB).toFixed(1)} MiB, ` +
      `heap +${((after.heap - before.heap) / MiB).toFixed(1)} MiB, RSS ${(before.rss / MiB).toFixed(0)} -> ${(after.rss / MiB).toFixed(0)} MiB\n`,
  );
}

const unbounded = 64 * 1024 * MiB;
/** name: keys verified, meta characters (null: none), maxBytes. */
const SCENARIOS: Record<string, [number, number | null, number]> = {
  "no meta": [100_000, null, unbounded],
  "small meta": [100_000, 16, unbounded],
  "64 KiB meta": [1_000, 64 * 1024, unbounded],
  "1 MiB meta": [100, MiB, unbounded],
  "small meta, default bound": [100_000, 16, KEY_CACHE_MAX_BYTES],
  "64 KiB meta, default bound": [10_000, 64 * 1024, KEY_CACHE_MAX_BYTES],
  "1 MiB meta, default bound": [1_000, MiB, KEY_CACHE_MAX_BYTES],
};

const only = process.argv[2];
if (only !== undefined) await scenario(only);
else {
  const { execFileSync } = await import("node:child_process");
  for (const name of Object.keys(SCENARIOS)) {
    execFileSync(process.execPath, [...process.execArgv, process.argv[1]!, name], { stdio: "inherit" });
  }
}
