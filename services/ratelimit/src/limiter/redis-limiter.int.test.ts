import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorReason, errorDetailOf, registry, TestClock } from "@latchkey/runtime";
import type { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, ownRedis, testClient, testRedisUrl, uniquePrefix } from "../../testing/redis.ts";
import { RedisLimiter, redisCounterKey, redisLiveSetKey } from "./redis-limiter.ts";
import { type CounterCheck, SlidingWindows } from "./sliding-windows.ts";

const SEP = "\u001f";
const key = (ws: string, identifier: string) => `${ws}${SEP}ns${SEP}${identifier}`;
const check = (over: Partial<CounterCheck> = {}): CounterCheck => ({
  key: key("ws_a", "u"),
  limit: 10,
  duration: 1_000,
  cost: 1,
  ...over,
});

/** Denials for want of room so far, counted by both limiters in one metric. */
const refusals = async () =>
  (await registry.getSingleMetric("latchkey_ratelimit_counter_refusals_total")!.get()).values.find(
    (v) => v.labels["reason"] === "workspace",
  )?.value ?? 0;

/** Numbers below n from a fixed seed (Park-Miller), so a failing step is the same on every run. */
function seeded(seed: number) {
  return (n: number) => {
    seed = (seed * 48271) % 2147483647;
    return seed % n;
  };
}

const storeFailures = async () =>
  (await registry.getSingleMetric("latchkey_ratelimit_store_failures_total")!.get()).values[0]?.value ?? 0;

const clients: Redis[] = [];
const prefixes: string[] = [];
async function limiter(
  options: { clock?: TestClock; bound?: number; url?: string; timeoutMs?: number } = {},
) {
  const client = await testClient(options.url ?? testRedisUrl, options.timeoutMs);
  clients.push(client);
  const prefix = uniquePrefix("limiter");
  prefixes.push(prefix);
  return {
    client,
    prefix,
    limiter: new RedisLimiter(client, {
      prefix,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.bound ? { maxCountersPerWorkspace: options.bound } : {}),
    }),
  };
}

afterAll(async () => {
  for (const c of clients) c.disconnect();
  for (const p of prefixes) await dropPrefix(testRedisUrl, p);
});

describe("counters in Redis: the same answers as in memory", () => {
  it("answers every check of 3,000 random groups exactly as the memory limiter does (cost, remaining, reset, all or nothing)", async () => {
    const clock = new TestClock(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
    const memory = new SlidingWindows(clock, { maxCounters: 1_000_000, maxCountersPerWorkspace: 1_000_000 });
    const { limiter: redis } = await limiter({ clock, bound: 1_000_000 });
    const random = seeded(7);
    const limits = [0, 1, 3, 10, 25];
    const durations = [1_000, 2_500, 60_000];
    const costs = [0, 1, 1, 1, 2, 5];
    let passed = 0;
    let denied = 0;
    for (let step = 0; step < 3_000; step++) {
      if (random(4) === 0) clock.advance(random(700));
      const batch: CounterCheck[][] = [];
      for (let g = 1 + random(3); g > 0; g--) {
        const ws = `ws_${random(2)}`;
        const group = Array.from({ length: 1 + random(3) }, () => ({
          key: key(ws, `u${random(4)}`),
          limit: limits[random(limits.length)]!,
          duration: durations[random(durations.length)]!,
          cost: costs[random(costs.length)]!,
        }));
        // Often the same lone check many times in a row, as a coalesced batch of one identifier.
        const times = group.length === 1 && random(2) === 0 ? 1 + random(12) : 1;
        for (let t = 0; t < times; t++) batch.push(group.map((c) => ({ ...c })));
      }
      const expected = batch.map((g) => memory.apply(g));
      const got = await redis.apply(batch);
      expect(got, `step ${step}`).toEqual(expected);
      for (const o of expected.flat()) o.success ? passed++ : denied++;
    }
    // Both answers occur often, so the comparison covered them.
    expect(passed).toBeGreaterThan(1_000);
    expect(denied).toBeGreaterThan(1_000);
  });

  it("refuses new counters past a workspace's bound exactly where the memory limiter does, over 1,500 random groups", async () => {
    // The clock moves less than a window here, so no counter ends: which ones are live does not
    // depend on when Redis expires keys, only on the bound.
    const clock = new TestClock(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
    const memory = new SlidingWindows(clock, { maxCounters: 1_000_000, maxCountersPerWorkspace: 5 });
    const { limiter: redis } = await limiter({ clock, bound: 5 });
    const random = seeded(11);
    const before = await refusals();
    for (let step = 0; step < 1_500; step++) {
      clock.advance(random(30));
      const batch: CounterCheck[][] = [];
      for (let g = 1 + random(3); g > 0; g--) {
        const ws = `ws_${random(3)}`;
        batch.push(
          Array.from({ length: 1 + random(3) }, () => ({
            key: key(ws, `u${random(8)}`),
            limit: 1 + random(30),
            duration: random(2) === 0 ? 60_000 : 3_600_000,
            cost: random(5) === 0 ? 0 : 1 + random(2),
          })),
        );
      }
      const expected = batch.map((g) => memory.apply(g));
      expect(await redis.apply(batch), `step ${step}`).toEqual(expected);
    }
    // Both limiters refused for want of room, the same checks, many times over.
    expect((await refusals()) - before).toBeGreaterThan(200);
  });

  it("lets exactly L of N concurrent checks through (L=100, N=500)", async () => {
    // A fixed clock: no window ends mid-test (crossing one would rightly admit one more).
    const { limiter: redis } = await limiter({ clock: new TestClock(Date.UTC(2026, 0, 1, 0, 0, 5)) });
    const outcomes = await Promise.all(
      Array.from({ length: 500 }, () => redis.apply([[check({ limit: 100, duration: 60_000 })]])),
    );
    expect(outcomes.filter((o) => o[0]![0]!.success)).toHaveLength(100);
    // And in one call, as a coalesced batch: 300 lone checks in a row, then one of cost 0.
    const { limiter: other } = await limiter({ clock: new TestClock(Date.UTC(2026, 0, 1, 0, 0, 5)) });
    const batch = [
      ...Array.from({ length: 300 }, () => [check({ limit: 100, duration: 60_000 })]),
      [check({ cost: 0, limit: 100, duration: 60_000 })],
    ];
    const answers = (await other.apply(batch)).map((g) => g[0]!);
    expect(answers.slice(0, 100).map((o) => o.remaining)).toEqual(
      Array.from({ length: 100 }, (_, i) => 99 - i),
    );
    expect(answers.slice(100, 300).every((o) => !o.success && o.remaining === 0)).toBe(true);
    expect(answers[300]).toMatchObject({ success: true, remaining: 0 });
  });

  it("keeps each workspace's counters under its own hash tag, so two workspaces never share one", async () => {
    const { limiter: redis, client, prefix } = await limiter();
    await redis.apply([[check({ key: key("ws_a", "same"), cost: 4 })]]);
    const [other] = await redis.apply([[check({ key: key("ws_b", "same"), cost: 0 })]]);
    expect(other![0]!.remaining).toBe(10);
    const keys = (await client.keys(`${prefix}*`)).sort();
    expect(keys).toEqual(
      [
        redisLiveSetKey(prefix, "ws_a"),
        redisCounterKey(prefix, { key: key("ws_a", "same"), duration: 1000 }),
      ].sort(),
    );
  });

  it("lets Redis expire a counter once both its windows have ended (PEXPIRE), and its workspace's set with the last one", async () => {
    const { limiter: redis, client, prefix } = await limiter();
    const outcome = (await redis.apply([[check({ duration: 60_000 })]]))[0]![0]!;
    const ttl = await client.pttl(redisCounterKey(prefix, { key: key("ws_a", "u"), duration: 60_000 }));
    // Both windows end one duration after this window's reset.
    const ends = outcome.reset + 60_000 - Date.now();
    expect(ttl).toBeGreaterThan(ends - 2_000);
    expect(ttl).toBeLessThanOrEqual(ends + 2_000);
    expect(await client.pttl(redisLiveSetKey(prefix, "ws_a"))).toBeGreaterThan(ends - 2_000);
  });

  it("sends the script calls of a batch naming three workspaces in one write, one call per workspace", async () => {
    const { limiter: redis, client } = await limiter();
    await redis.apply([[check()]]);
    const stream = (
      client as unknown as { stream: { write: (data: unknown, ...rest: unknown[]) => boolean } }
    ).stream;
    const write = stream.write;
    const written: string[] = [];
    stream.write = function (this: unknown, data: unknown, ...rest: unknown[]) {
      written.push(String(data));
      return write.call(this, data, ...rest);
    };
    try {
      const answers = await redis.apply([
        [check()],
        [check({ key: key("ws_b", "u") })],
        [check({ key: key("ws_c", "u"), cost: 3 })],
        [check()],
      ]);
      expect(answers.map((g) => g[0]!.remaining)).toEqual([8, 9, 7, 7]);
    } finally {
      stream.write = write;
    }
    expect(written).toHaveLength(1);
    expect(written[0]!.match(/\r\nevalsha\r\n/g)).toHaveLength(3);
  });

  it("refuses a group whose checks span two workspaces rather than count one under the other's tag", async () => {
    const { limiter: redis } = await limiter();
    await expect(
      redis.apply([[check({ key: key("ws_a", "u") }), check({ key: key("ws_b", "u") })]]),
    ).rejects.toThrow("spans more than one workspace");
  });
});

describe("counters in Redis: bounds per workspace", () => {
  it("denies a new counter of a workspace at its bound, keeps its other counters exact, and leaves other workspaces alone", async () => {
    const clock = new TestClock(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
    const { limiter: redis } = await limiter({ clock, bound: 3 });
    const before = await refusals();
    for (let i = 0; i < 3; i++) {
      expect((await redis.apply([[check({ key: key("a", `u${i}`) })]]))[0]![0]!.success).toBe(true);
    }
    expect((await redis.apply([[check({ key: key("a", "u3") })]]))[0]![0]).toEqual({
      success: false,
      refused: true,
      limit: 10,
      remaining: 0,
      reset: clock.now() + 500,
    });
    expect(await refusals()).toBe(before + 1);
    // Cost 0 makes no counter, so it is answered.
    expect((await redis.apply([[check({ key: key("a", "u3"), cost: 0 })]]))[0]![0]).toMatchObject({
      success: true,
      remaining: 10,
    });
    expect((await redis.apply([[check({ key: key("a", "u0") })]]))[0]![0]!.remaining).toBe(8);
    expect((await redis.apply([[check({ key: key("b", "u3") })]]))[0]![0]!.success).toBe(true);
  });

  it("counts a group nothing when one of its checks finds no room, and needs one room for a counter named twice", async () => {
    const clock = new TestClock(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
    const { limiter: redis } = await limiter({ clock, bound: 2 });
    await redis.apply([[check({ key: key("a", "u0") })]]);
    const group = [
      check({ key: key("a", "u0") }),
      check({ key: key("a", "u1") }),
      check({ key: key("a", "u2") }),
    ];
    expect((await redis.apply([group]))[0]!.map((o) => o.success)).toEqual([true, true, false]);
    expect((await redis.apply([[check({ key: key("a", "u0"), cost: 0 })]]))[0]![0]!.remaining).toBe(9);
    const twice = [check({ key: key("a", "u1") }), check({ key: key("a", "u1") })];
    expect((await redis.apply([twice]))[0]!.map((o) => o.remaining)).toEqual([9, 8]);
    expect((await redis.apply([[check({ key: key("a", "u2") })]]))[0]![0]!.success).toBe(false);
  });

  it("gives the room of a counter whose windows have both ended to a new one (Redis's clock, 100 ms windows)", async () => {
    const { limiter: redis } = await limiter({ bound: 1 });
    const short = (identifier: string) => check({ key: key("a", identifier), duration: 100 });
    expect((await redis.apply([[short("first")]]))[0]![0]!.success).toBe(true);
    expect((await redis.apply([[short("second")]]))[0]![0]!.success).toBe(false);
    await new Promise((r) => setTimeout(r, 250));
    expect((await redis.apply([[short("second")]]))[0]![0]!.success).toBe(true);
  });
});

describe("counters in Redis: Redis down", () => {
  const unavailable = (err: unknown) => {
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unavailable);
    expect(errorDetailOf(err)?.reason).toBe(ErrorReason.UNAVAILABLE);
    return true;
  };

  it("fails every check at once with UNAVAILABLE while Redis is stopped, and counts again once it is back, with no restart", async () => {
    const server = await ownRedis();
    try {
      const { limiter: redis } = await limiter({ url: server.url, timeoutMs: 200 });
      expect((await redis.apply([[check({ duration: 60_000 })]]))[0]![0]!.remaining).toBe(9);
      await server.stop();
      // 200 checks at once while it is down: each fails, none waits for a reconnection or the timeout.
      const failedBefore = await storeFailures();
      const started = performance.now();
      const failures = await Promise.all(
        Array.from({ length: 200 }, () => redis.apply([[check({ duration: 60_000 })]]).catch(unavailable)),
      );
      expect(failures).toEqual(Array(200).fill(true));
      expect(performance.now() - started).toBeLessThan(1_000);
      expect((await storeFailures()) - failedBefore).toBe(200);
      // A batch fails as a whole and counts every check it carried.
      await redis
        .apply([[check()], [check({ key: key("ws_b", "u") })], [check(), check({ key: key("ws_a", "v") })]])
        .catch(unavailable);
      expect((await storeFailures()) - failedBefore).toBe(204);
      await server.start();
      // Reconnection is retried every 500 ms at most: answered again within a few seconds.
      const back = performance.now();
      let outcome: number | undefined;
      while (outcome === undefined && performance.now() - back < 5_000) {
        outcome = await redis.apply([[check({ duration: 60_000 })]]).then(
          (o) => o[0]![0]!.remaining,
          () => new Promise<undefined>((r) => setTimeout(() => r(undefined), 50)),
        );
      }
      // This Redis keeps nothing across a restart (no AOF): the count starts again.
      expect(outcome).toBe(9);
      expect(performance.now() - back).toBeLessThan(3_000);
    } finally {
      await server.stop();
    }
  });

  it("fails a check that Redis does not answer in time after the command timeout, not later", async () => {
    const server = await ownRedis({ debug: true });
    try {
      const { limiter: redis, client } = await limiter({ url: server.url, timeoutMs: 200 });
      await redis.apply([[check()]]);
      const blocker = await testClient(server.url, 5_000);
      clients.push(blocker);
      const sleeping = blocker.call("DEBUG", "SLEEP", "1.5");
      await new Promise((r) => setTimeout(r, 50));
      const started = performance.now();
      const failedBefore = await storeFailures();
      await expect(redis.apply([[check()]]).catch(unavailable)).resolves.toBe(true);
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThanOrEqual(150);
      expect(waited).toBeLessThan(1_000);
      // A batch of several workspaces (one pipeline) fails as a whole, in the same time, every check counted.
      const batchStarted = performance.now();
      await expect(
        redis
          .apply([[check()], [check({ key: key("ws_b", "u") }), check({ key: key("ws_b", "v") })]])
          .catch(unavailable),
      ).resolves.toBe(true);
      expect(performance.now() - batchStarted).toBeLessThan(1_000);
      expect((await storeFailures()) - failedBefore).toBe(4);
      await sleeping;
      expect(client.status).toBe("ready");
      expect((await redis.apply([[check({ cost: 0 })]]))[0]![0]!.success).toBe(true);
    } finally {
      await server.stop();
    }
  });
});
