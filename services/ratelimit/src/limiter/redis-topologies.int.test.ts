import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TestClock } from "@latchkey/runtime";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { ownRedis } from "../../testing/redis.ts";
import { connectRedis, redisReady } from "./redis-connection.ts";
import { RedisLimiter, redisCounterKey, redisLiveSetKey } from "./redis-limiter.ts";
import { type CounterCheck, SlidingWindows } from "./sliding-windows.ts";

// REDIS_MODE=cluster and sentinel against servers of the test's own (redis-server on the PATH).
const dir = mkdtempSync(join(tmpdir(), "latchkey-redis-"));
const servers: { stop(): Promise<void> }[] = [];
const clients: { disconnect(): void }[] = [];

afterAll(async () => {
  for (const c of clients) c.disconnect();
  for (const s of servers) await s.stop();
  rmSync(dir, { recursive: true, force: true });
});

const key = (ws: string, identifier: string) => `${ws}\u001fns\u001f${identifier}`;

/** Groups of named-limit checks over 40 workspaces, two limits each, so their slots fall on every node. */
function traffic(round: number): CounterCheck[][] {
  return Array.from({ length: 40 }, (_, w) => [
    { key: key(`ws_${w}`, "key_1\u001frequests"), limit: 3, duration: 60_000, cost: 1 },
    { key: key(`ws_${w}`, `key_${round % 2}\u001ftokens`), limit: 5, duration: 3_600_000, cost: 2 },
  ]);
}

describe("RATELIMIT_STORE=redis on a Cluster", () => {
  it("counts the groups of 40 workspaces spread over three primaries exactly as memory does, one slot per workspace", async () => {
    const nodes = [];
    for (let i = 0; i < 3; i++) {
      const node = await ownRedis({ clusterDir: dir });
      servers.push(node);
      nodes.push(node);
    }
    execFileSync(
      "redis-cli",
      [
        "--cluster",
        "create",
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        "--cluster-replicas",
        "0",
        "--cluster-yes",
      ],
      { stdio: "ignore" },
    );
    const probes = nodes.map((n) => new Redis(n.url));
    clients.push(...probes);
    for (const probe of probes) {
      for (let i = 0; i < 100 && !(await probe.cluster("INFO")).includes("cluster_state:ok"); i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const client = connectRedis({
      urls: [nodes[0]!.url],
      mode: "cluster",
      sentinelMaster: "",
      prefix: "",
      timeoutMs: 1_000,
    });
    clients.push(client);
    expect(await redisReady(client, 10_000)).toBe(true);
    const clock = new TestClock(Date.UTC(2026, 0, 1, 0, 0, 30));
    const redis = new RedisLimiter(client, { prefix: "lk:", clock });
    const memory = new SlidingWindows(clock);
    for (let round = 0; round < 4; round++) {
      const batch = traffic(round);
      expect(await redis.apply(batch), `round ${round}`).toEqual(batch.map((g) => memory.apply(g)));
    }
    // Every primary holds some workspaces' counters, and each workspace's keys share one slot.
    const sizes = await Promise.all(probes.map((p) => p.dbsize()));
    expect(
      sizes.every((n) => n > 0),
      `keys per node: ${sizes}`,
    ).toBe(true);
    const slots = new Set(
      await Promise.all(
        [
          redisLiveSetKey("lk:", "ws_7"),
          redisCounterKey("lk:", { key: key("ws_7", "key_1\u001frequests"), duration: 60_000 }),
        ].map((k) => probes[0]!.cluster("KEYSLOT", k)),
      ),
    );
    expect(slots.size).toBe(1);
  });
});

describe("RATELIMIT_STORE=redis through Sentinel", () => {
  it("finds the primary through the Sentinel and counts there", async () => {
    const primary = await ownRedis();
    servers.push(primary);
    const sentinel = await ownRedis({ sentinel: { primaryPort: primary.port, name: "counters", dir } });
    servers.push(sentinel);
    const client = connectRedis({
      urls: [sentinel.url],
      mode: "sentinel",
      sentinelMaster: "counters",
      prefix: "",
      timeoutMs: 1_000,
    });
    clients.push(client);
    expect(await redisReady(client, 10_000)).toBe(true);
    const redis = new RedisLimiter(client, { prefix: "lk:" });
    const outcomes = await redis.apply([[{ key: key("ws_1", "u"), limit: 2, duration: 60_000, cost: 1 }]]);
    expect(outcomes[0]![0]).toMatchObject({ success: true, remaining: 1 });
    const direct = new Redis(primary.url);
    clients.push(direct);
    expect(await direct.exists(redisCounterKey("lk:", { key: key("ws_1", "u"), duration: 60_000 }))).toBe(1);
  });
});
