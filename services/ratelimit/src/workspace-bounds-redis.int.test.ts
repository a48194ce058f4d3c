import type { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { caller, floodNewCounters, harness, LIMITER } from "../testing/in-memory-ratelimit.ts";
import { dropPrefix, testClient, testRedisUrl, uniquePrefix } from "../testing/redis.ts";
import { redisLiveSetKey } from "./limiter/redis-limiter.ts";

// workspace-bounds.test.ts's flood, with the counters in Redis: the bound per workspace holds
// across the replicas' shared store, and one workspace's flood costs another nothing.
const DAY = 86_400_000n;
const MIDNIGHT = BigInt(Date.UTC(2026, 0, 2));
const prefix = uniquePrefix("bounds");
let redis: Redis | undefined;

afterAll(async () => {
  redis?.disconnect();
  await dropPrefix(testRedisUrl, prefix);
});

describe("one workspace's counters in Redis against another workspace's traffic", () => {
  it("a flood of new daily counters from workspace B stops at B's bound in Redis and leaves A's counters exact and A's room whole", async () => {
    redis = await testClient();
    const { client } = harness({ redis: { client: redis, prefix }, maxCountersPerWorkspace: 250 });
    const a = caller("ws_a", ...LIMITER);
    const b = caller("ws_b", ...LIMITER);
    const named = (workspaceId: string, owner: string, limit: bigint, cost = 1n) => ({
      workspaceId,
      limits: [{ owner, name: "requests", limit, duration: DAY, cost }],
    });
    const standalone = (identifier: string, limit: bigint, cost = 1n) => ({
      namespace: "api",
      identifier,
      limit,
      duration: DAY,
      cost,
    });
    // A: a key's named limit and a standalone identifier, 10 a day each, 7 used in one batch each.
    const named7 = await client.checkNamedLimits({ groups: Array(7).fill(named("ws_a", "key_a", 10n)) });
    expect(named7.groups.map((g) => g.passed)).toEqual(Array(7).fill(true));
    const standalone7 = await client.limitBatch({
      callers: [a],
      items: Array.from({ length: 7 }, () => ({
        callerIndex: 0,
        request: { check: standalone("user_1", 10n) },
      })),
    });
    expect(
      standalone7.results.map((r) => (r.result.case === "response" ? r.result.value.result?.remaining : -1n)),
    ).toEqual([9n, 8n, 7n, 6n, 5n, 4n, 3n]);

    // B: 1,960 new counters (20 verification batches, 10 coalesced limit batches) against a bound of 250.
    const passed = await floodNewCounters(client, b, {
      verificationBatches: 20,
      limitBatches: 10,
      singles: 0,
    });
    expect(passed).toBe(250);
    expect(await redis.zcard(redisLiveSetKey(prefix, "ws_b"))).toBe(250);
    expect(await redis.zcard(redisLiveSetKey(prefix, "ws_a"))).toBe(2);

    // A has exactly 3 left on both, then is denied; and A still has room for new identifiers.
    const left = await client.checkNamedLimits({ groups: [named("ws_a", "key_a", 10n, 0n)] });
    expect(left.groups[0]!.results[0]).toMatchObject({ remaining: 3n, reset: MIDNIGHT, exceeded: false });
    const passes: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      passes.push(
        (await client.limit({ caller: a, check: standalone("user_1", 10n) })).result?.success ?? false,
      );
    }
    expect(passes).toEqual([true, true, true, false]);
    expect((await client.limit({ caller: a, check: standalone("user_new", 10n) })).result?.success).toBe(
      true,
    );
    expect((await client.limit({ caller: b, check: standalone("user_new", 10n) })).result?.success).toBe(
      false,
    );
  });
});
