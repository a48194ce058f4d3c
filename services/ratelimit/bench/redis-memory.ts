import { Redis } from "ioredis";
import { RedisLimiter } from "../src/limiter/redis-limiter.ts";
import type { CounterCheck } from "../src/limiter/sliding-windows.ts";
import { ownRedis, testClient } from "../src/redis-testing.ts";

/**
 * Redis memory per counter with RATELIMIT_STORE=redis: N new counters through
 * RedisLimiter.apply on a redis-server of its own, used_memory before and
 * after (the counter's hash, its TTL and its member in the workspace's set):
 *   node --import tsx services/ratelimit/bench/redis-memory.ts
 * N (100000), IDENTIFIER (12 characters), WORKSPACES (10).
 */
const N = Number(process.env["N"] ?? 100_000);
const LENGTH = Number(process.env["IDENTIFIER"] ?? 12);
const WORKSPACES = Number(process.env["WORKSPACES"] ?? 10);

const server = await ownRedis();
try {
  const client = await testClient(server.url, 5_000);
  const info = new Redis(server.url);
  const used = async () => Number(/used_memory:(\d+)/.exec(await info.info("memory"))![1]);
  const limiter = new RedisLimiter(client, { prefix: "latchkey:rl:", maxCountersPerWorkspace: N });
  const before = await used();
  const ns = "rlns_0123456789abcdef0123456789";
  for (let i = 0; i < N; i += 500) {
    const groups: CounterCheck[][] = [];
    for (let j = i; j < Math.min(N, i + 500); j++) {
      const ws = `ws_${String(j % WORKSPACES).padStart(21, "0")}`;
      const id = String(j).padStart(LENGTH, "u");
      groups.push([{ key: `${ws}\u001f${ns}\u001f${id}`, limit: 100, duration: 60_000, cost: 1 }]);
    }
    await limiter.apply(groups);
  }
  const after = await used();
  const key = `ws_${"0".repeat(21)}\u001f${ns}\u001f${"u".repeat(LENGTH)}`.length;
  process.stdout.write(
    `${N} counters, key ${key} characters (identifier ${LENGTH}): ${((after - before) / 1e6).toFixed(1)} MB, ${Math.round((after - before) / N)} bytes per counter\n`,
  );
  client.disconnect();
  info.disconnect();
} finally {
  await server.stop();
}
