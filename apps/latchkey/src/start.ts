import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  analyticsRoutes,
  createAnalyticsDeps,
  createEmbeddedAnalyticsDeps,
  type EmbeddedAnalyticsDeps,
  migrateClickHouse,
  openClickHouse,
  startConsumer,
} from "@latchkey/analytics";
import { builtConsolePages } from "@latchkey/console/build";
import { createGateway, listen, metricsPortOf, serveMetrics } from "@latchkey/gateway";
import { createIdentityDeps, IDENTITY_AUDIT_TABLE, identityRoutes } from "@latchkey/identity";
import {
  createKeysDeps,
  createRootKey,
  creditSpendsSql,
  creditsLowFractionFromEnv,
  ensureRootKey,
  KEY_CACHE_MAX_BYTES,
  KEYS_AUDIT_TABLE,
  keysRoutes,
  MIN_CACHE_BYTES,
  startRefills,
} from "@latchkey/keys";
import {
  createRatelimitDeps,
  RATELIMIT_AUDIT_TABLE,
  ratelimitRoutes,
  registerMemoryInstance,
} from "@latchkey/ratelimit";
import { connectRedis, redisReady } from "@latchkey/ratelimit/limiter/redis-connection";
import { counterBoundsFromEnv, storeFromEnv } from "@latchkey/ratelimit/settings";
import {
  AuditPruner,
  type Bus,
  createLogger,
  type EventSink,
  ensureEventsStream,
  env,
  JetStreamEventSink,
  localTransport,
  MemoryBus,
  NatsBus,
  type Sql,
  systemClock,
} from "@latchkey/runtime";
import { WEBHOOKS_AUDIT_TABLE, webhookSettingsFromEnv } from "@latchkey/webhooks";
import { dataDir, openDatabase } from "./database.ts";
import { privateDir } from "./embedded-postgres.ts";
import { relayKeyChanges } from "./key-changes.ts";
import { composeWebhooks } from "./webhooks.ts";

/**
 * `npm start`: the gateway and every service in one process. With no
 * configuration it keeps its data, analytics included, in embedded PostgreSQL
 * under DATA_DIR; with DATABASE_URL, NATS_URL and CLICKHOUSE_URL it
 * uses those servers. Services call each other through localTransport: the
 * same routes as the separate processes, as function calls (no network hop,
 * no serialisation).
 */
const log = createLogger("latchkey");
const say = (line: string) => process.stdout.write(`${line}\n`);

/**
 * Every setting, read and checked before anything is opened, so that a bad one
 * stops the start with a message naming it and leaves the database untouched.
 */
function readSettings() {
  // CREDITS_ASYNC_COMMIT is for PostgreSQL servers only: PGlite is one backend, whose commits it would not change.
  const asyncCommit = env.bool("CREDITS_ASYNC_COMMIT", false);
  // Metrics on a loopback port of their own by default (gateway/README.md); the public port has none.
  const metrics = {
    value: env.string("METRICS_PORT", "9464")!,
    chosen: process.env["METRICS_PORT"] !== undefined,
  };
  metricsPortOf(metrics.value);
  return {
    natsUrl: env.string("NATS_URL"),
    clickhouseUrl: env.string("CLICKHOUSE_URL"),
    asyncCommit: Boolean(env.string("DATABASE_URL")) && asyncCommit,
    cacheSize: env.int("KEY_CACHE_SIZE", 100_000, 1),
    cacheMaxBytes: env.int("KEY_CACHE_MAX_BYTES", KEY_CACHE_MAX_BYTES, MIN_CACHE_BYTES),
    creditsLowFraction: creditsLowFractionFromEnv(),
    port: env.int("PORT", 7070),
    host: env.string("HOST", "0.0.0.0"),
    rootKeyCacheTtlMs: rootKeyCacheTtlMs(),
    metrics,
    metricsHost: env.string("METRICS_HOST", "127.0.0.1")!,
    encryptionKey: encryptionKey(),
    counterBounds: counterBoundsFromEnv(),
    ratelimitStore: storeFromEnv(),
    webhooks: webhookSettingsFromEnv(),
  };
}

/** Longest ROOT_KEY_CACHE_TTL_MS: how long a root key revoked while a notice of it is lost can still work. */
const MAX_ROOT_KEY_CACHE_TTL_MS = 60_000;

function rootKeyCacheTtlMs(): number {
  const ttl = env.int("ROOT_KEY_CACHE_TTL_MS", 5_000, 0);
  if (ttl > MAX_ROOT_KEY_CACHE_TTL_MS) {
    throw new Error(`ROOT_KEY_CACHE_TTL_MS must be at most ${MAX_ROOT_KEY_CACHE_TTL_MS}, got '${ttl}'`);
  }
  return ttl;
}

async function main() {
  privateDir(dataDir());
  const settings = readSettings();
  const db = await openDatabase({
    reuseRunning: false,
    onLost(err) {
      log.fatal({ err }, "the embedded database stopped; Latchkey cannot serve without it");
      process.exit(1);
    },
  });
  // Counting rate limits in its own memory, the process refuses to start beside another that does on
  // this database (services/ratelimit/src/instances.ts), before anything else of it starts.
  const ratelimitInstance = await registerMemoryInstance(db.sql, settings.ratelimitStore, { log });
  const { natsUrl, clickhouseUrl } = settings;
  const nats = natsUrl ? await NatsBus.connect(natsUrl, log, "latchkey") : undefined;
  const bus: Bus = nats ?? new MemoryBus();

  // Analytics: JetStream into ClickHouse when both are configured, else in this process.
  const closers: (() => Promise<void>)[] = [];
  let events: EventSink;
  let eventsViaNats = false;
  let analytics: EmbeddedAnalyticsDeps | ReturnType<typeof createAnalyticsDeps>;
  if (nats && clickhouseUrl) {
    const { client } = await openClickHouse(clickhouseUrl);
    await migrateClickHouse(client);
    await ensureEventsStream(nats.nc);
    analytics = createAnalyticsDeps({
      nats: nats.nc,
      clickhouse: client,
      log: log.child({ service: "analytics" }),
    });
    const consumer = await startConsumer({ nats: nats.nc, store: analytics.store, log });
    const sink = new JetStreamEventSink(nats.nc, log);
    events = sink;
    eventsViaNats = true;
    closers.push(async () => {
      await sink.flush(5_000);
      sink.close();
      await consumer.stop();
      await client.close();
    });
  } else {
    // Kept in this process's database (PGlite, or DATABASE_URL), so they survive a restart like the keys.
    const embedded = await createEmbeddedAnalyticsDeps({
      log: log.child({ service: "analytics" }),
      sql: db.sql,
    });
    analytics = embedded;
    events = embedded.events;
    // Runs after the server has closed (no more events) and before the database closes: writes the buffer.
    closers.push(() => embedded.close());
  }

  // Webhooks: DomainEvents from JetStream where events go through it, else handed over in process.
  const webhooks = await composeWebhooks({
    sql: db.sql,
    encryptionKey: settings.encryptionKey,
    events,
    ...(eventsViaNats && nats ? { nats: nats.nc } : {}),
    settings: settings.webhooks,
    log: log.child({ service: "webhooks" }),
  });
  events = webhooks.events;
  // Before analytics' closer: the server has closed by then, and the database closes after.
  closers.unshift(() => webhooks.close());

  // RATELIMIT_STORE=redis: counters in Redis, so that several of these processes behind one load
  // balancer share each budget, as the ratelimit service's replicas do (docs/deployment.md).
  const store = settings.ratelimitStore;
  const redis = store.store === "redis" ? connectRedis(store.redis, log) : undefined;
  if (redis) {
    if (!(await redisReady(redis, 5_000))) {
      log.warn("ratelimit: Redis is not answering yet; checks fail (UNAVAILABLE) until it does");
    }
    closers.push(async () => redis.disconnect());
  }
  const ratelimit = createRatelimitDeps({
    sql: db.sql,
    bus,
    events,
    log: log.child({ service: "ratelimit" }),
    instance: ratelimitInstance,
    ...settings.counterBounds,
    ...(redis && store.store === "redis" ? { redis: { client: redis, prefix: store.redis.prefix } } : {}),
  });
  const identity = createIdentityDeps({ sql: db.sql, bus, events, log: log.child({ service: "identity" }) });
  // Audit records older than AUDIT_RETENTION_DAYS go, from each context's table (packages/runtime/src/audit.ts).
  const auditRetentionDays = env.int("AUDIT_RETENTION_DAYS", 365, 1);
  const auditPruners = [
    KEYS_AUDIT_TABLE,
    IDENTITY_AUDIT_TABLE,
    RATELIMIT_AUDIT_TABLE,
    WEBHOOKS_AUDIT_TABLE,
  ].map((table) => new AuditPruner(db.sql, table, { retentionDays: auditRetentionDays, log }).start());
  closers.unshift(async () => {
    for (const pruner of auditPruners) await pruner.stop();
  });
  const transports = {
    ratelimit: localTransport(ratelimitRoutes(ratelimit)),
    identity: localTransport(identityRoutes(identity)),
  };
  const spendSql = creditSpendsSql(db.url, settings.asyncCommit);
  closers.push(() => spendSql.end({ timeout: 5 }));
  const keys = createKeysDeps({
    sql: db.sql,
    spendSql,
    bus,
    events,
    encryptionKey: settings.encryptionKey,
    cacheSize: settings.cacheSize,
    cacheMaxBytes: settings.cacheMaxBytes,
    creditsLowFraction: settings.creditsLowFraction,
    log: log.child({ service: "keys" }),
    ...transports,
  });
  const stopRefills = startRefills(db.sql, { clock: keys.clock, log });
  const gateway = createGateway({
    keys: localTransport(keysRoutes(keys)),
    ...transports,
    analytics: localTransport(analyticsRoutes(analytics)),
    webhooks: webhooks.transport,
    log: log.child({ service: "gateway" }),
    clock: systemClock,
    bus,
    rootKeyCacheTtlMs: settings.rootKeyCacheTtlMs,
    // In process a batch is a function call, not an RPC, so more may be out at once (measured:
    // docs/architecture.md, Measured settings).
    batchesInFlight: 8,
    // The web console at /, built on the first start of a checkout.
    pages: await builtConsolePages(),
  });

  // Root-key revocations by the CLI, announced through the database, reach this process's gateway at once.
  const stopRelay = await relayKeyChanges(db.sql, bus, log);
  closers.unshift(stopRelay);
  const bootstrap = await bootstrapRootKey(db.sql);
  const server = await listen(gateway, settings.port, settings.host);
  const metrics = await serveMetrics(settings.metrics, settings.metricsHost, log);

  say(`Latchkey is listening on http://localhost:${server.port} (${db.description})`);
  for (const line of bootstrap) say(line);
  say(`Console: http://localhost:${server.port}/ (sign in with the root key)`);
  if (metrics) say(`Prometheus metrics: http://${settings.metricsHost}:${metrics.port}/metrics`);
  say(
    `Try: curl -s localhost:${server.port}/v2/apis.createApi -H "Authorization: Bearer $ROOT_KEY" -d '{"name":"my-api"}'`,
  );

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down");
    await server.close();
    await metrics?.close();
    stopRefills();
    for (const close of closers) await close();
    await keys.close();
    await ratelimit.close();
    await bus.close();
    await db.close();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

/**
 * The key-encryption key for recoverable keys: LATCHKEY_ENCRYPTION_KEY (base64
 * of 32 bytes), else one generated for this data directory and kept in
 * DATA_DIR/encryption-key (mode 0600).
 */
function encryptionKey(): Buffer {
  const fromEnv = env.string("LATCHKEY_ENCRYPTION_KEY");
  const text =
    fromEnv ?? readOrCreate(join(dataDir(), "encryption-key"), () => randomBytes(32).toString("base64"));
  const key = Buffer.from(text, "base64");
  if (key.length !== 32) throw new Error("LATCHKEY_ENCRYPTION_KEY must be the base64 of 32 random bytes");
  return key;
}

/**
 * A root key to start with, and what the start says of it. LATCHKEY_ROOT_KEY
 * becomes one (idempotently; the operator knows it, so it is never printed);
 * else the key this data directory was first started with is kept in
 * DATA_DIR/root-key (mode 0600): printed once, when it is made, and on later
 * starts only where it is kept, so it does not pile up in container and
 * journal logs. A revoked one stays revoked: the start says so in a log line,
 * without the key, and serves without it.
 */
async function bootstrapRootKey(sql: Sql): Promise<string[]> {
  const fromEnv = env.string("LATCHKEY_ROOT_KEY");
  const file = join(dataDir(), "root-key");
  if (fromEnv) {
    const { rootKeyId, revoked } = await ensureRootKey(sql, fromEnv);
    if (revoked) return staysRevoked(rootKeyId, "the root key in LATCHKEY_ROOT_KEY");
    return [`The root key (holds *) is the one in LATCHKEY_ROOT_KEY (${rootKeyId}).`];
  }
  if (existsSync(file)) {
    const { rootKeyId, revoked } = await ensureRootKey(sql, readFileSync(file, "utf8").trim());
    if (revoked) return staysRevoked(rootKeyId, `the root key kept in ${file}`);
    return [
      `The root key (holds *) is kept in ${file} (mode 0600) and not shown again: export ROOT_KEY=$(cat "${file}")`,
    ];
  }
  const created = await createRootKey(sql, { permissions: ["*"], name: "bootstrap" });
  write(file, created.rootKey);
  return [
    `Root key (holds *): ${created.rootKey}`,
    `It is shown this once; it is kept in ${file} (mode 0600).`,
  ];
}

/** Said in the banner, beside the address, so it is read in the same place and order as the rest of the start. */
function staysRevoked(rootKeyId: string, which: string): string[] {
  return [
    `${which.charAt(0).toUpperCase()}${which.slice(1)} (${rootKeyId}) is revoked and stays revoked; starting without it (a new one: npm run latchkey -- root-key create --permissions '*')`,
  ];
}

function readOrCreate(file: string, make: () => string): string {
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  const value = make();
  write(file, value);
  return value;
}

function write(file: string, secret: string) {
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

main().catch((err: unknown) => {
  log.error({ err }, "Latchkey failed to start");
  process.exit(1);
});
