import { ratelimitCodecs } from "@latchkey/proto/codecs/ratelimit";
import {
  AuditPruner,
  type Bus,
  connect,
  createLogger,
  ensureEventsStream,
  env,
  InternalAuth,
  internalTransport,
  JetStreamEventSink,
  MemoryBus,
  migrate,
  NatsBus,
  serveRpc,
} from "@latchkey/runtime";
import { createRatelimitDeps } from "./deps.ts";
import { registerMemoryInstance } from "./instances.ts";
import type { PeerConfig } from "./limiter/peer-limiter.ts";
import { connectRedis, redisReady } from "./limiter/redis-connection.ts";
import { ratelimitMigrations } from "./migrations.ts";
import { ratelimitRoutes } from "./routes.ts";
import { counterBoundsFromEnv, storeFromEnv } from "./settings.ts";
import { RATELIMIT_AUDIT_TABLE } from "./store/postgres-ratelimit-store.ts";

// Every setting is read and checked before anything connects or migrates.
const log = createLogger("ratelimit", env.string("LOG_LEVEL", "info"));
const port = env.int("PORT", 7072);
// Calls are served only when signed by another Latchkey process; forwards to peers are signed too.
const auth = InternalAuth.fromEnv();
// The deadline of a check forwarded to a peer, below keys' own (2 s): a peer that does not answer in
// time has its checks counted here instead (peer-limiter.ts).
const timeoutMs = env.int("RPC_TIMEOUT_MS", 1_000, 1);
const databaseUrl = env.required("DATABASE_URL");
const natsUrl = env.string("NATS_URL");
// Several replicas share one budget when each knows them all (itself included) and which one it is.
const peerList = env.string("RATELIMIT_PEERS");
const peers: PeerConfig | undefined = peerList
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
      transport: (baseUrl: string) => internalTransport(baseUrl, { auth, timeoutMs }),
    }
  : undefined;
const bounds = counterBoundsFromEnv();
// memory (here, or at each counter's owner with RATELIMIT_PEERS) or redis (shared by every replica).
const store = storeFromEnv();
// Audit records older than this many days are deleted in the background (packages/runtime/src/audit.ts).
const auditRetentionDays = env.int("AUDIT_RETENTION_DAYS", 365, 1);
const sql = connect(databaseUrl);
await migrate(sql, "ratelimit", ratelimitMigrations);
// Counting in its own memory (no Redis, no peers), this process refuses to start beside another that
// does on this database: each would count every budget alone.
const instance = await registerMemoryInstance(sql, { ...store, peers: peers !== undefined }, { log });
const auditPruner = new AuditPruner(sql, RATELIMIT_AUDIT_TABLE, {
  retentionDays: auditRetentionDays,
  log,
}).start();

const nats = natsUrl ? await NatsBus.connect(natsUrl, log, "ratelimit") : undefined;
const bus: Bus = nats ?? new MemoryBus();
// Standalone checks go to analytics through JetStream; without NATS they are not recorded.
if (nats) await ensureEventsStream(nats.nc);
const sink = nats ? new JetStreamEventSink(nats.nc, log) : undefined;

if (peers && !natsUrl) {
  log.warn(
    "RATELIMIT_PEERS without NATS_URL: override changes reach the other replicas only after their restart",
  );
}

// Connects in the background: until Redis answers, checks fail fast (UNAVAILABLE) rather than wait.
const redis = store.store === "redis" ? connectRedis(store.redis, log) : undefined;
if (redis && !(await redisReady(redis, 5_000))) {
  log.warn("ratelimit: Redis is not answering yet; checks fail (UNAVAILABLE) until it does");
}

const deps = createRatelimitDeps({
  sql,
  bus,
  log,
  instance,
  ...bounds,
  ...(sink ? { events: sink } : {}),
  ...(peers ? { peers } : {}),
  ...(redis && store.store === "redis" ? { redis: { client: redis, prefix: store.redis.prefix } } : {}),
});
// The batched calls of the hot path are read and written by hand-written codecs (proto/codecs/wire).
const served = await serveRpc(ratelimitRoutes(deps), port, { ready: () => deps.store.ping() }, undefined, {
  codecs: ratelimitCodecs,
  auth,
});
log.info(
  {
    port,
    store: store.store,
    ...(store.store === "redis"
      ? { redisMode: store.redis.mode, redisTimeoutMs: store.redis.timeoutMs }
      : { replicas: peers?.peers.length ?? 1, ...bounds }),
  },
  "ratelimit service listening",
);

let stopping = false;
async function stop(signal: string) {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, "ratelimit service stopping");
  await served.close();
  // Checks answered before the stop still reach analytics.
  if (sink) {
    await sink.flush(5_000);
    sink.close();
  }
  await auditPruner.stop();
  await deps.close();
  redis?.disconnect();
  await bus.close();
  await sql.end({ timeout: 5 });
  process.exit(0);
}
process.once("SIGTERM", () => void stop("SIGTERM"));
process.once("SIGINT", () => void stop("SIGINT"));
