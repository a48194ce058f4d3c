import { createClient, createRouterTransport } from "@connectrpc/connect";
import { RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { TestClock } from "@latchkey/runtime";
import type { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createMemoryRatelimitDeps } from "./deps.ts";
import { dropPrefix, testClient, testRedisUrl, uniquePrefix } from "./redis-testing.ts";
import { ratelimitRoutes } from "./routes.ts";
import { caller, LIMITER } from "./test-kit.ts";

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
    const clock = new TestClock(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
    const deps = createMemoryRatelimitDeps({
      clock,
      redis: { client: redis, prefix },
      maxCountersPerWorkspace: 250,
    });
    const client = createClient(RatelimitService, createRouterTransport(ratelimitRoutes(deps)));
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
    for (let i = 0; i < 7; i++) {
      expect(
        (await client.checkNamedLimits({ groups: [named("ws_a", "key_a", 10n)] })).groups[0]!.passed,
      ).toBe(true);
      expect((await client.limit({ caller: a, check: standalone("user_1", 10n) })).result?.success).toBe(
        true,
      );
    }

    // B: 20 verification batches of 22 verifications with 3 new limits each, and 10 coalesced
    // ratelimits.limit batches of 64 new identifiers: 1,960 new counters against a bound of 250.
    let n = 0;
    let passed = 0;
    for (let call = 0; call < 20; call++) {
      const groups = Array.from({ length: 22 }, () => ({
        workspaceId: "ws_b",
        limits: Array.from({ length: 3 }, () => ({
          owner: `key_${n++}`,
          name: "requests",
          limit: 1000n,
          duration: DAY,
        })),
      }));
      passed += (await client.checkNamedLimits({ groups })).groups.filter((g) => g.passed).length * 3;
    }
    for (let call = 0; call < 10; call++) {
      const res = await client.limitBatch({
        callers: [b],
        items: Array.from({ length: 64 }, () => ({
          callerIndex: 0,
          request: { check: standalone(`flood_${n++}`, 1000n) },
        })),
      });
      passed += res.results.filter(
        (r) => r.result.case === "response" && r.result.value.result?.success,
      ).length;
    }
    expect(passed).toBe(250);
    expect(await redis.zcard(`${prefix}{ws_b}`)).toBe(250);
    expect(await redis.zcard(`${prefix}{ws_a}`)).toBe(2);

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
