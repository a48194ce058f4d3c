import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Transport } from "@connectrpc/connect";
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
import { parsePublicUrl } from "@latchkey/gateway/portal-web";
import { gatewayStarting, rootKeyCacheTtlMsFromEnv } from "@latchkey/gateway/starting";
import { createIdentityDeps, identityRoutes } from "@latchkey/identity";
import {
  createKeysDeps,
  createRootKey,
  creditSpendsSql,
  creditsLowFractionFromEnv,
  ensureRootKey,
  KEY_CACHE_MAX_BYTES,
  keysRoutes,
  MIN_CACHE_BYTES,
  scanningKeysFromEnv,
  startExpiringNotices,
  startRefills,
} from "@latchkey/keys";
import { createPortalDeps, portalRoutes, portalSettingsFromEnv } from "@latchkey/portal";
import {
  createRatelimitDeps,
  ratelimitRoutes,
  registerMemoryInstance,
  UnsharedMemoryError,
} from "@latchkey/ratelimit";
import { connectRedis, redisReady } from "@latchkey/ratelimit/limiter/redis-connection";
import { counterBoundsFromEnv, storeFromEnv } from "@latchkey/ratelimit/settings";
import {
  AuditPruner,
  type Bus,
  CONTEXTS,
  type ContextName,
  connectNats,
  createLogger,
  type EventSink,
  ensureEventsStream,
  env,
  JetStreamEventSink,
  localTransport,
  MemoryBus,
  NatsBus,
  runProcess,
  type Sql,
  type Starting,
  systemClock,
} from "@latchkey/runtime";
import { webhookSettingsFromEnv } from "@latchkey/webhooks";
import { dataDir, openDatabase } from "./database.ts";
import { privateDir } from "./embedded-postgres.ts";
import { relayKeyChanges } from "./key-changes.ts";
import { composeWebhooks } from "./webhooks.ts";

/**
 * `npm start`: the gateway and every context in one process. With no
 * configuration it keeps its data, analytics included, in embedded PostgreSQL
 * under DATA_DIR; with DATABASE_URL, NATS_URL and CLICKHOUSE_URL it
 * uses those servers, waiting for each with backoff while it answers /readyz
 * 503 (packages/runtime/src/bootstrap.ts). Contexts call each other through
 * localTransport: the same routes as the separate processes, as function calls
 * (no network hop, no serialisation).
 */
const log = createLogger("latchkey");
const say = (line: string) => process.stdout.write(`${line}\n`);

/**
 * Every setting, read and checked before anything is opened, so that a bad one
 * stops the start with a message naming it and leaves the database untouched.
 */
function readSettings() {
  privateDir(dataDir());
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
    secretScanningKeys: scanningKeysFromEnv(env.string("SECRET_SCANNING_KEYS")),
    port: env.int("PORT", 7070),
    host: env.string("HOST", "0.0.0.0")!,
    rootKeyCacheTtlMs: rootKeyCacheTtlMsFromEnv(),
    metrics,
    metricsHost: env.string("METRICS_HOST", "127.0.0.1")!,
    encryptionKey: encryptionKey(),
    counterBounds: counterBoundsFromEnv(),
    ratelimitStore: storeFromEnv(),
    webhooks: webhookSettingsFromEnv(),
    portal: portalSettingsFromEnv(),
    // The portal's URLs and its same-origin check (docs/portal.md); unset, each request's own origin.
    publicUrl: publicUrlFromEnv(),
    // Audit records older than this many days go, from each context's table (packages/runtime/src/audit.ts).
    auditRetentionDays: env.int("AUDIT_RETENTION_DAYS", 365, 1),
  };
}

/** PUBLIC_URL, checked with the settings: a bad one stops the start before anything connects, naming it. */
function publicUrlFromEnv(): string | undefined {
  const value = env.string("PUBLIC_URL");
  if (value === undefined || value.trim() === "") return undefined;
  parsePublicUrl(value);
  return value;
}

type Settings = ReturnType<typeof readSettings>;

await runProcess({ name: "Latchkey", log, answers: gatewayStarting, settings: readSettings, start });

async function start(settings: Settings, boot: Starting) {
  const { until, onStop } = boot;
  const db = await openDatabase({
    reuseRunning: false,
    onLost(err) {
      log.fatal({ err }, "the embedded database stopped; Latchkey cannot serve without it");
      process.exit(1);
    },
    until,
  });
  onStop(() => db.close());
  // Counting rate limits in its own memory, the process refuses to start beside another that does on
  // this database (services/ratelimit/src/instances.ts), before anything else of it starts.
  const ratelimitInstance = await until(
    "PostgreSQL",
    () => registerMemoryInstance(db.sql, settings.ratelimitStore, { log }),
    (err) => err instanceof UnsharedMemoryError,
  );
  onStop(() => ratelimitInstance?.close());
  const { natsUrl, clickhouseUrl } = settings;
  const nats = natsUrl ? await until("NATS", () => NatsBus.connect(natsUrl, log, "latchkey")) : undefined;
  if (nats) onStop(() => nats.close());
  const bus: Bus = nats ?? new MemoryBus();
  /**
   * A NATS connection for one JetStream consumer: a consumer catching up on a backlog is handed
   * messages on its own socket, so it cannot crowd the bus or the JetStream API requests of `nats`.
   */
  const consumerConnection = async (name: string): Promise<NatsBus["nc"]> => {
    const url = natsUrl!;
    const nc = await until("NATS", () => connectNats(url, name));
    onStop(() => nc.drain().catch(() => nc.close()));
    return nc;
  };

  // Analytics: JetStream into ClickHouse when both are configured, else in this process.
  let events: EventSink;
  let eventsViaNats = false;
  let analytics: EmbeddedAnalyticsDeps | ReturnType<typeof createAnalyticsDeps>;
  if (nats && clickhouseUrl) {
    const { client } = await until("ClickHouse", async () => {
      const opened = await openClickHouse(clickhouseUrl);
      try {
        await migrateClickHouse(opened.client);
        return opened;
      } catch (err) {
        await opened.client.close();
        throw err;
      }
    });
    onStop(() => client.close());
    await until("JetStream", () => ensureEventsStream(nats.nc));
    analytics = createAnalyticsDeps({
      nats: nats.nc,
      clickhouse: client,
      log: log.child({ service: "analytics" }),
    });
    const consumerNats = await consumerConnection("latchkey-analytics");
    const store = analytics.store;
    const consumer = await until("JetStream consumer", () =>
      startConsumer({ nats: consumerNats, store, log }),
    );
    onStop(() => consumer.stop());
    const sink = new JetStreamEventSink(nats.nc, log);
    onStop(async () => {
      await sink.flush(5_000);
      sink.close();
    });
    events = sink;
    eventsViaNats = true;
  } else {
    // Kept in this process's database (PGlite, or DATABASE_URL), so they survive a restart like the keys.
    const embedded = await until("PostgreSQL", () =>
      createEmbeddedAnalyticsDeps({ log: log.child({ service: "analytics" }), sql: db.sql }),
    );
    // Runs after the server has closed (no more events) and before the database closes: writes the buffer.
    onStop(() => embedded.close());
    analytics = embedded;
    events = embedded.events;
  }

  // Webhooks: DomainEvents from JetStream where events go through it, else handed over in process.
  const intakeNats = eventsViaNats ? await consumerConnection("latchkey-webhooks") : undefined;
  const analyticsEvents = events;
  const webhooks = await until(intakeNats ? "JetStream consumer" : "PostgreSQL", () =>
    composeWebhooks({
      sql: db.sql,
      encryptionKey: settings.encryptionKey,
      events: analyticsEvents,
      ...(intakeNats ? { nats: intakeNats } : {}),
      settings: settings.webhooks,
      log: log.child({ service: "webhooks" }),
    }),
  );
  onStop(() => webhooks.close());
  events = webhooks.events;

  // RATELIMIT_STORE=redis: counters in Redis, so that several of these processes behind one load
  // balancer share each budget, as the ratelimit service's replicas do (docs/deployment.md).
  const store = settings.ratelimitStore;
  const redis = store.store === "redis" ? connectRedis(store.redis, log) : undefined;
  if (redis) {
    onStop(() => redis.disconnect());
    await until("Redis", async () => {
      if (!(await redisReady(redis, 2_000))) throw new Error(`no answer from ${redis.status} Redis`);
    });
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
  onStop(() => ratelimit.close());
  const identity = createIdentityDeps({ sql: db.sql, bus, events, log: log.child({ service: "identity" }) });
  for (const context of Object.values(CONTEXTS)) {
    if (context.auditTable === undefined) continue;
    const pruner = new AuditPruner(db.sql, context.auditTable, {
      retentionDays: settings.auditRetentionDays,
      log,
    }).start();
    onStop(() => pruner.stop());
  }
  const spendSql = creditSpendsSql(db.url, settings.asyncCommit);
  onStop(() => spendSql.end({ timeout: 5 }));
  const called = {
    ratelimit: localTransport(ratelimitRoutes(ratelimit)),
    identity: localTransport(identityRoutes(identity)),
  };
  const keys = createKeysDeps({
    sql: db.sql,
    spendSql,
    bus,
    events,
    encryptionKey: settings.encryptionKey,
    cacheSize: settings.cacheSize,
    cacheMaxBytes: settings.cacheMaxBytes,
    creditsLowFraction: settings.creditsLowFraction,
    ...(settings.secretScanningKeys ? { secretScanningKeys: settings.secretScanningKeys } : {}),
    log: log.child({ service: "keys" }),
    ...called,
  });
  onStop(() => keys.close());
  onStop(startRefills(db.sql, { clock: keys.clock, log }));
  onStop(startExpiringNotices(db.sql, { clock: keys.clock, log, events: keys.events }));
  const keysTransport = localTransport(keysRoutes(keys));
  const analyticsTransport = localTransport(analyticsRoutes(analytics));
  const portal = createPortalDeps({
    sql: db.sql,
    keys: keysTransport,
    analytics: analyticsTransport,
    settings: settings.portal,
    log: log.child({ service: "portal" }),
  });
  const transports: Record<ContextName, Transport> = {
    ...called,
    keys: keysTransport,
    analytics: analyticsTransport,
    webhooks: webhooks.transport,
    portal: localTransport(portalRoutes(portal)),
  };
  const gateway = createGateway({
    ...transports,
    log: log.child({ service: "gateway" }),
    clock: systemClock,
    bus,
    rootKeyCacheTtlMs: settings.rootKeyCacheTtlMs,
    ...(settings.publicUrl ? { publicUrl: settings.publicUrl } : {}),
    // In process a batch is a function call, not an RPC: 8 out at once measured about +9 % for
    // the full verification (paired runs, PostgreSQL) and +6 % for ratelimits.limit over 2.
    batchesInFlight: 8,
    // The web console at / and the portal web app at /portal/, built on the first start of a checkout.
    pages: await builtConsolePages(),
  });

  // Root-key revocations by the CLI, announced through the database, reach this process's gateway at once.
  const stopRelay = await until("PostgreSQL", () => relayKeyChanges(db.sql, bus, log));
  onStop(stopRelay);
  const bootstrap = await until("PostgreSQL", () => bootstrapRootKey(db.sql));
  const server = await listen(gateway, boot.port, settings.host);
  onStop(() => server.close());
  const metrics = await serveMetrics(settings.metrics, settings.metricsHost, log);
  if (metrics) onStop(() => metrics.close());

  say(`Latchkey is listening on http://localhost:${server.port} (${db.description})`);
  for (const line of bootstrap) say(line);
  say(`Console: http://localhost:${server.port}/ (sign in with the root key)`);
  if (metrics) say(`Prometheus metrics: http://${settings.metricsHost}:${metrics.port}/metrics`);
  say(
    `Try: curl -s localhost:${server.port}/v2/apis.createApi -H "Authorization: Bearer $ROOT_KEY" -d '{"name":"my-api"}'`,
  );
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
