import type { Logger } from "@latchkey/runtime";
import { Cluster, Redis, type RedisOptions } from "ioredis";
import type { RedisSettings } from "../settings.ts";

/**
 * A client that never lets a check wait on Redis longer than the timeout:
 * no offline queue (a command sent while disconnected fails at once instead
 * of piling up), a command timeout well under the callers' RPC deadlines, no
 * resending of a script whose answer was lost (it may have counted already),
 * and reconnection in the background every half second at most, so Redis
 * coming back needs no restart. No auto-pipelining: the limiter already
 * sends one script call per workspace and call (one pipeline for a batch), so
 * there is nothing left for it to gather.
 */
export function connectRedis(settings: RedisSettings, log?: Logger): Redis | Cluster {
  const common: RedisOptions = {
    enableOfflineQueue: false,
    commandTimeout: settings.timeoutMs,
    connectTimeout: Math.max(1_000, settings.timeoutMs),
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    enableAutoPipelining: false,
    retryStrategy: (times) => Math.min(times * 50, 500),
  };
  let client: Redis | Cluster;
  if (settings.mode === "standalone") {
    client = new Redis(settings.urls[0]!, common);
  } else {
    const nodes = settings.urls.map((u) => new URL(u));
    const first = nodes[0]!;
    const auth = {
      ...(first.username ? { username: decodeURIComponent(first.username) } : {}),
      ...(first.password ? { password: decodeURIComponent(first.password) } : {}),
      ...(first.protocol === "rediss:" ? { tls: {} } : {}),
    };
    const hosts = nodes.map((u) => ({
      host: u.hostname,
      port: Number(u.port || (settings.mode === "sentinel" ? 26379 : 6379)),
    }));
    if (settings.mode === "sentinel") {
      client = new Redis({
        ...common,
        ...auth,
        sentinels: hosts,
        name: settings.sentinelMaster,
        // The Sentinels take the same credentials as the primary, when they have any.
        ...(auth.password ? { sentinelPassword: auth.password } : {}),
        ...(auth.username ? { sentinelUsername: auth.username } : {}),
        ...(auth.tls ? { enableTLSForSentinelMode: true } : {}),
        db: Number(first.pathname.slice(1) || 0),
      });
    } else {
      client = new Cluster(hosts, {
        enableOfflineQueue: false,
        clusterRetryStrategy: (times) => Math.min(times * 50, 500),
        redisOptions: { ...common, ...auth },
      });
    }
  }
  // Without a listener an error event would crash the process; the checks it fails are logged by the limiter.
  client.on("error", (err: Error) => log?.debug({ err: err.message }, "ratelimit: Redis connection error"));
  return client;
}

/**
 * Resolves once the client is connected, or after `ms` whatever its state: a
 * process starting before Redis serves anyway (its checks fail fast until
 * Redis answers). Answers whether it is ready.
 */
export function redisReady(client: Redis | Cluster, ms: number): Promise<boolean> {
  if (client.status === "ready") return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      client.off("ready", onReady);
      resolve(false);
    }, ms);
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    client.once("ready", onReady);
  });
}
