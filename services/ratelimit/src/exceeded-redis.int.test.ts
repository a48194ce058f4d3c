import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe } from "vitest";
import { exceededSuite } from "../testing/exceeded.suite.ts";
import { harness } from "../testing/in-memory-ratelimit.ts";
import { dropPrefix, testClient, testRedisUrl, uniquePrefix } from "../testing/redis.ts";

// exceeded.test.ts's cases with the counters in Redis (RATELIMIT_STORE=redis), each on a prefix of its own.
const prefixes: string[] = [];
let redis: Redis;

beforeAll(async () => {
  redis = await testClient();
});
afterAll(async () => {
  redis?.disconnect();
  for (const prefix of prefixes) await dropPrefix(testRedisUrl, prefix);
});

describe("ratelimit.exceeded with counters in Redis", () => {
  exceededSuite(({ clock, ...options }) => {
    const prefix = uniquePrefix("exceeded");
    prefixes.push(prefix);
    return harness({ ...options, redis: { client: redis, prefix }, ...(clock ? { clock } : {}) });
  });
});
