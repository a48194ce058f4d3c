import { ratelimitCodecs } from "@latchkey/proto/codecs/ratelimit";
import { env, internalTransport, runService } from "@latchkey/runtime";
import { createRatelimitDeps } from "./deps.ts";
import { registerMemoryInstance, UnsharedMemoryError } from "./instances.ts";
import type { PeerConfig } from "./limiter/peer-limiter.ts";
import { connectRedis, redisReady } from "./limiter/redis-connection.ts";
import { ratelimitMigrations } from "./migrations.ts";
import { ratelimitRoutes } from "./routes.ts";
import { counterBoundsFromEnv, storeFromEnv } from "./settings.ts";

// The ratelimit service as its own process: runService reads and connects what its row of
// packages/runtime/src/contexts.ts names; the settings below are its own, checked before anything
// connects or migrates.
await runService("ratelimit", {
  migrations: ratelimitMigrations,
  settings() {
    // Several replicas share one budget when each knows them all (itself included) and which one it is.
    const peerList = env.string("RATELIMIT_PEERS");
    return {
      // The deadline of a check forwarded to a peer, below keys' own (2 s): a peer that does not answer in
      // time has its checks counted here instead (peer-limiter.ts).
      timeoutMs: env.int("RPC_TIMEOUT_MS", 1_000, 1),
      peers: peerList
        ? {
            // Required only with peers, so not read by env.required (which deploy/ takes for always).
            self:
              env.string("RATELIMIT_SELF") ??
              (() => {
                throw new Error("RATELIMIT_SELF is required with RATELIMIT_PEERS");
              })(),
            peers: peerList
              .split(",")
              .map((p) => p.trim())
              .filter(Boolean),
          }
        : undefined,
      bounds: counterBoundsFromEnv(),
      // memory (here, or at each counter's owner with RATELIMIT_PEERS) or redis (shared by every replica).
      store: storeFromEnv(),
    };
  },
  async start(s, ctx) {
    const { log } = ctx;
    const sql = ctx.sql;
    const store = s.store;
    const peers: PeerConfig | undefined = s.peers && {
      ...s.peers,
      // Forwards to peers are signed, as every call between Latchkey's processes.
      transport: (baseUrl: string) => internalTransport(baseUrl, { auth: ctx.auth, timeoutMs: s.timeoutMs }),
    };
    // Counting in its own memory (no Redis, no peers), this process refuses to start beside another that
    // does on this database: each would count every budget alone. That refusal ends the start.
    const instance = await ctx.until(
      "PostgreSQL",
      () => registerMemoryInstance(sql, { ...store, peers: peers !== undefined }, { log }),
      (err) => err instanceof UnsharedMemoryError,
    );
    // Removed at stop even when the start is cut short before the deps below (which close it too).
    ctx.onStop(() => instance?.close());
    // Standalone checks go to analytics through JetStream; without NATS they are not recorded.
    const events = ctx.events();
    if (peers && !ctx.nats) {
      log.warn(
        "RATELIMIT_PEERS without NATS_URL: override changes reach the other replicas only after their restart",
      );
    }
    // Not ready until Redis answers; once started, a Redis outage fails checks fast (UNAVAILABLE) rather than wait.
    const redis = store.store === "redis" ? connectRedis(store.redis, log) : undefined;
    if (redis) {
      ctx.onStop(() => redis.disconnect());
      await ctx.until("Redis", async () => {
        if (!(await redisReady(redis, 2_000))) throw new Error(`no answer from ${redis.status} Redis`);
      });
    }
    const deps = createRatelimitDeps({
      sql,
      bus: ctx.bus,
      log,
      instance,
      ...s.bounds,
      ...(events ? { events } : {}),
      ...(peers ? { peers } : {}),
      ...(redis && store.store === "redis" ? { redis: { client: redis, prefix: store.redis.prefix } } : {}),
    });
    ctx.onStop(() => deps.close());
    return {
      routes: ratelimitRoutes(deps),
      ready: () => deps.store.ping(),
      // The batched calls of the hot path are read and written by hand-written codecs (proto/codecs/wire).
      codecs: ratelimitCodecs,
      about: {
        store: store.store,
        ...(store.store === "redis"
          ? { redisMode: store.redis.mode, redisTimeoutMs: store.redis.timeoutMs }
          : { replicas: peers?.peers.length ?? 1, ...s.bounds }),
      },
    };
  },
});
