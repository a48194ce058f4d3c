import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "@latchkey/runtime/testing/free-port";
import { Redis } from "ioredis";
import { connectRedis, redisReady } from "../src/limiter/redis-connection.ts";
import type { RedisSettings } from "../src/settings.ts";

/** The shared Redis of the integration tests; each test keeps to a prefix of its own. */
export const testRedisUrl = process.env["TEST_REDIS_URL"] ?? "redis://127.0.0.1:6379";

/** A key prefix no other test or run uses. */
export const uniquePrefix = (name: string) => `test:${name}:${randomBytes(6).toString("hex")}:`;

/** A client as production builds it (no offline queue, a command timeout), for `url`, once connected. */
export async function testClient(url = testRedisUrl, timeoutMs = 500): Promise<Redis> {
  const settings: RedisSettings = {
    urls: [url],
    mode: "standalone",
    sentinelMaster: "",
    prefix: "",
    timeoutMs,
  };
  const client = connectRedis(settings) as Redis;
  if (!(await redisReady(client, 5_000))) throw new Error(`no Redis at ${url}`);
  return client;
}

/** Deletes every key under `prefix` (SCAN, never KEYS: the Redis is shared). */
export async function dropPrefix(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

/**
 * A redis-server of the test's own (redis-server on the PATH) on a free port, which the test may stop
 * and start again on the same port (never the shared one). No persistence:
 * a restart forgets the counters, as a Redis without AOF would.
 */
export async function ownRedis(
  options: {
    debug?: boolean;
    /** A Cluster node, its state kept in this directory. */
    clusterDir?: string;
    /** A Sentinel watching the primary on this port as `name`, its configuration kept in `dir`. */
    sentinel?: { primaryPort: number; name: string; dir: string };
    /** More of redis-server's options, e.g. ["--maxmemory", "16mb"]. */
    args?: string[];
  } = {},
): Promise<{
  url: string;
  port: number;
  pid(): number | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const url = `redis://127.0.0.1:${port}`;
  const sentinel = options.sentinel;
  let config: string[] = [];
  if (sentinel) {
    const file = join(sentinel.dir, `sentinel-${port}.conf`);
    writeFileSync(
      file,
      `sentinel monitor ${sentinel.name} 127.0.0.1 ${sentinel.primaryPort} 1\nsentinel down-after-milliseconds ${sentinel.name} 1000\n`,
    );
    config = [file, "--sentinel"];
  }
  const start = async () => {
    child = spawn(
      "redis-server",
      [
        ...config,
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        // DEBUG SLEEP makes a server that does not answer in time.
        ...(options.debug ? ["--enable-debug-command", "yes"] : []),
        ...(options.clusterDir
          ? [
              "--cluster-enabled",
              "yes",
              "--cluster-config-file",
              `nodes-${port}.conf`,
              "--dir",
              options.clusterDir,
            ]
          : []),
        ...(options.args ?? []),
      ],
      { stdio: "ignore" },
    );
    // Ready once it answers PING (a client that queues until connected, retrying every 20 ms).
    const probe = new Redis(url, { retryStrategy: () => 20, maxRetriesPerRequest: null });
    probe.on("error", () => {});
    try {
      await probe.ping();
    } finally {
      probe.disconnect();
    }
  };
  const stop = async () => {
    const c = child;
    if (c === undefined || c.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
    c.kill("SIGKILL");
    await exited;
    child = undefined;
  };
  await start();
  return { url, port, pid: () => child?.pid, start, stop };
}
