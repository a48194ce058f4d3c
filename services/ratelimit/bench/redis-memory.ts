import { TestClock } from "@latchkey/runtime";
import { Redis } from "ioredis";
import { RedisLimiter } from "../src/limiter/redis-limiter.ts";
import type { CounterCheck } from "../src/limiter/sliding-windows.ts";
import { ownRedis, testClient } from "../testing/redis.ts";

/**
 * Redis memory per counter with RATELIMIT_STORE=redis, in the worst shape the
 * script writes: N new counters through RedisLimiter.apply on a redis-server
 * of its own, each counted in two windows in a row (so its hash holds a
 * window sequence, a current and a previous count, all as large as a limit
 * can make them), with identifiers of IDENTIFIER characters of CHAR (a
 * three-byte one in UTF-8 by default). Prints used_memory before and after
 * (INFO memory: the counters' hashes, their TTLs, their members in the
 * workspace's set), and MEMORY USAGE of one counter and of the set:
 *   node --import tsx services/ratelimit/bench/redis-memory.ts
 * N (100000), IDENTIFIER (512), CHAR (€), WORKSPACES (1), DURATION (2592000000, 30 days).
 */
const N = Number(process.env["N"] ?? 100_000);
const LENGTH = Number(process.env["IDENTIFIER"] ?? 512);
const CHAR = process.env["CHAR"] ?? "€";
const WORKSPACES = Number(process.env["WORKSPACES"] ?? 1);
const DURATION = Number(process.env["DURATION"] ?? 2_592_000_000);
const PREFIX = "latchkey:rl:";
/** The largest limit a check may carry, and a cost that makes the stored counts about as long. */
const LIMIT = Number.MAX_SAFE_INTEGER;
const COST = 2 ** 51;

const server = await ownRedis();
try {
  const client = await testClient(server.url, 10_000);
  const info = new Redis(server.url);
  const used = async () => Number(/used_memory:(\d+)/.exec(await info.info("memory"))![1]);
  const clock = new TestClock(Date.UTC(2026, 0, 1));
  const limiter = new RedisLimiter(client, { prefix: PREFIX, maxCountersPerWorkspace: N, clock });
  const ws = (j: number) => `ws_${String(j % WORKSPACES).padStart(16, "0")}`;
  const ns = "rlns_0123456789ABCDEF";
  const identifier = (j: number) => String(j).padStart(LENGTH, CHAR).slice(-LENGTH);
  const before = await used();
  // Two windows: the first count becomes the previous one, the second the current one.
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < N; i += 500) {
      const groups: CounterCheck[][] = [];
      for (let j = i; j < Math.min(N, i + 500); j++) {
        const key = `${ws(j)}\u001f${ns}\u001f${identifier(j)}`;
        groups.push([{ key, limit: LIMIT, duration: DURATION, cost: COST }]);
      }
      const outcomes = await limiter.apply(groups);
      if (!outcomes.every((g) => g[0]!.success)) throw new Error("a counter was not counted");
    }
    clock.advance(DURATION);
  }
  const after = await used();
  // The workspace's set is the one key of the workspace that is a sorted set.
  const keys = await client.keys(`${PREFIX}{${ws(0)}}*`);
  const types = await Promise.all(keys.map((k) => client.type(k)));
  const set = keys[types.indexOf("zset")];
  const counter = keys[types.indexOf("hash")]!;
  const counterBytes = Number(await client.memory("USAGE", counter, "SAMPLES", "0"));
  const setBytes = set === undefined ? 0 : Number(await client.memory("USAGE", set, "SAMPLES", "0"));
  const per = (after - before) / N;
  process.stdout.write(
    `${N} counters in ${WORKSPACES} workspace(s), identifier ${LENGTH} × '${CHAR}' (${Buffer.byteLength(identifier(0))} bytes in UTF-8): ` +
      `used_memory +${((after - before) / 1e6).toFixed(1)} MB, ${Math.round(per)} bytes per counter; ` +
      `MEMORY USAGE of one counter ${counterBytes} (key ${Buffer.byteLength(counter)} bytes), ` +
      `of the workspace's set ${setBytes} (${Math.round(setBytes / (N / WORKSPACES))} per counter)\n`,
  );
  client.disconnect();
  info.disconnect();
} finally {
  await server.stop();
}
