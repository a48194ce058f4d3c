import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caller, harness, LIMITER } from "../testing/in-memory-ratelimit.ts";
import { ownRedis, testClient } from "../testing/redis.ts";
import { REDIS_COUNTER_BYTES, redisLiveSetKey } from "./limiter/redis-limiter.ts";

// What one workspace can make Redis hold: a fixed number of bytes per counter, whatever identifiers it
// sends, so its bound on counters is a bound on bytes; tested on a redis-server of the test's own
// with a small maxmemory and noeviction, as the overlay's Valkey runs.
const DAY = 86_400_000n;
const MIDNIGHT = BigInt(Date.UTC(2026, 0, 2));
const MAXMEMORY = 24 * 1024 * 1024;
const BOUND = 20_000;
let server: Awaited<ReturnType<typeof ownRedis>>;
const clients: Redis[] = [];

beforeAll(async () => {
  server = await ownRedis({ args: ["--maxmemory", String(MAXMEMORY), "--maxmemory-policy", "noeviction"] });
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server?.stop();
});

async function service(prefix: string) {
  const client = await testClient(server.url, 5_000);
  clients.push(client);
  return harness({ redis: { client, prefix }, maxCountersPerWorkspace: BOUND });
}

/** The longest identifier (512 characters), each three bytes in UTF-8, ending in `i`. */
const longest = (i: number) => `${i}`.padStart(512, "€");
const standalone = (identifier: string, limit: bigint, cost = 1n) => ({
  namespace: "api",
  identifier,
  limit,
  duration: DAY,
  cost,
});

describe("Redis memory per workspace", () => {
  it("a workspace filling its whole bound with the longest identifiers holds at most its bytes, and another workspace is still served exactly", async () => {
    const info = new Redis(server.url);
    clients.push(info);
    const used = async () => Number(/used_memory:(\d+)/.exec(await info.info("memory"))![1]);
    const { client } = await service("flood:");
    const a = caller("ws_a", ...LIMITER);
    const b = caller("ws_b", ...LIMITER);
    // A: 7 of a standalone identifier's 10 and of a key's named limit's 10.
    for (let i = 0; i < 7; i++) {
      expect((await client.limit({ caller: a, check: standalone("user_1", 10n) })).result?.success).toBe(
        true,
      );
      const named = await client.checkNamedLimits({
        groups: [
          { workspaceId: "ws_a", limits: [{ owner: "key_a", name: longest(0), limit: 10n, duration: DAY }] },
        ],
      });
      expect(named.groups[0]!.passed).toBe(true);
    }
    const before = await used();

    // B: 25,000 new identifiers of 1,534 bytes each, in coalesced batches of 64, against a bound of 20,000.
    let passed = 0;
    let failed = 0;
    for (let n = 0; n < 25_000; n += 64) {
      const res = await client
        .limitBatch({
          callers: [b],
          items: Array.from({ length: 64 }, (_, i) => ({
            callerIndex: 0,
            request: { check: standalone(longest(n + i), 1000n) },
          })),
        })
        .catch(() => undefined);
      for (const r of res?.results ?? []) {
        if (r.result.case === "response" && r.result.value.result?.success) passed++;
        else if (r.result.case === "error") failed++;
      }
    }
    expect({ passed, failed }).toEqual({ passed: BOUND, failed: 0 });
    expect(await info.zcard(redisLiveSetKey("flood:", "ws_b"))).toBe(BOUND);
    const grown = (await used()) - before;
    expect(grown).toBeLessThanOrEqual(BOUND * REDIS_COUNTER_BYTES);
    expect(await used()).toBeLessThan(MAXMEMORY);

    // A counts on exactly: 3 left of each, then denied; and A's new identifiers are counted.
    const left = await client.limit({ caller: a, check: standalone("user_1", 10n, 0n) });
    expect(left.result).toMatchObject({ success: true, remaining: 3n, reset: MIDNIGHT });
    const passes: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      passes.push(
        (await client.limit({ caller: a, check: standalone("user_1", 10n) })).result?.success ?? false,
      );
    }
    expect(passes).toEqual([true, true, true, false]);
    const named = await client.checkNamedLimits({
      groups: [
        {
          workspaceId: "ws_a",
          limits: [{ owner: "key_a", name: longest(0), limit: 10n, duration: DAY, cost: 0n }],
        },
      ],
    });
    expect(named.groups[0]!.results[0]).toMatchObject({ remaining: 3n, exceeded: false });
    expect((await client.limit({ caller: a, check: standalone(longest(1), 10n) })).result).toMatchObject({
      success: true,
      remaining: 9n,
    });
  }, 120_000);

  it("counts identifiers that share all but their last character, or one that is the start of another, apart", async () => {
    const { client } = await service("prefixes:");
    const a = caller("ws_a", ...LIMITER);
    const one = longest(1);
    const pairs: [string, string][] = [
      [one, `${one.slice(0, 511)}2`],
      ["user", "user_"],
      [longest(3).slice(0, 511), longest(3)],
    ];
    for (const [first, second] of pairs) {
      for (let i = 0; i < 3; i++) await client.limit({ caller: a, check: standalone(first, 10n) });
      expect((await client.limit({ caller: a, check: standalone(second, 10n) })).result?.remaining).toBe(9n);
      expect((await client.limit({ caller: a, check: standalone(first, 10n, 0n) })).result?.remaining).toBe(
        7n,
      );
    }
  });

  it("applies an override of the longest identifier, exact or by wildcard, to its counter in Redis", async () => {
    const { client } = await service("overrides:");
    const a = caller("ws_a", ...LIMITER, "ratelimit.*.set_override");
    const exact = longest(1);
    await client.limit({ caller: a, check: standalone("warm", 10n) });
    await client.setOverride({ caller: a, namespace: "api", identifier: exact, limit: 2n, duration: DAY });
    await client.setOverride({ caller: a, namespace: "api", identifier: "€€€*", limit: 4n, duration: DAY });
    const exactRuns = [];
    for (let i = 0; i < 3; i++) {
      const r = (await client.limit({ caller: a, check: standalone(exact, 100n) })).result!;
      exactRuns.push([r.success, r.limit, r.remaining]);
    }
    expect(exactRuns).toEqual([
      [true, 2n, 1n],
      [true, 2n, 0n],
      [false, 2n, 0n],
    ]);
    const wild = (await client.limit({ caller: a, check: standalone(longest(2), 100n) })).result!;
    expect(wild).toMatchObject({ success: true, limit: 4n, remaining: 3n });
    expect(wild.overrideId).toMatch(/^rlor_/);
  });
});
