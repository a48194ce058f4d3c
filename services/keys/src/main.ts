import { verifyKeyBatchCodecs } from "@latchkey/proto/codecs/keys";
import { ratelimitCodecs } from "@latchkey/proto/codecs/ratelimit";
import {
  AuditPruner,
  connect,
  createLogger,
  type EventSink,
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
import { ensureRootKey } from "./admin.ts";
import { creditsLowFractionFromEnv } from "./credit-events.ts";
import { createKeysDeps, creditSpendsSql, MIN_CACHE_BYTES } from "./deps.ts";
import { keysMigrations } from "./migrations.ts";
import { startRefills } from "./refills.ts";
import { keysRoutes } from "./routes.ts";
import { KEYS_AUDIT_TABLE } from "./store/postgres-keys-store.ts";

// The keys service as its own process, configured by env. Every setting is read and checked before
// anything connects or migrates, so a mistake stops the process without touching the database.
const log = createLogger("keys", env.string("LOG_LEVEL", "info"));
// Calls are served only when the gateway (or another Latchkey process) signed them; keys signs its own.
const auth = InternalAuth.fromEnv();
const databaseUrl = env.required("DATABASE_URL");
const port = env.int("PORT", 7071);
const rootKey = env.string("LATCHKEY_ROOT_KEY");
const natsUrl = env.string("NATS_URL");
// Without it, keys cannot be created recoverable (PRECONDITION_FAILED); never logged.
const encryptionKeyText = env.string("LATCHKEY_ENCRYPTION_KEY");
const encryptionKey = encryptionKeyText ? Buffer.from(encryptionKeyText, "base64") : undefined;
if (encryptionKey && encryptionKey.length !== 32) {
  log.fatal("LATCHKEY_ENCRYPTION_KEY must be the base64 of 32 random bytes (openssl rand -base64 32)");
  process.exit(1);
}
// When the ratelimit service cannot be asked: true (default, as Unkey) lets verifications
// through, false answers 503 so no key outruns its named limits during an outage.
const ratelimitFailOpen = env.bool("RATELIMIT_FAIL_OPEN", true);
// true: credit spends commit without waiting for the disk (exact; a PostgreSQL crash forgets its last moments).
const asyncCommit = env.bool("CREDITS_ASYNC_COMMIT", false);
// credits.low below this share of a key's refill amount or given balance (0: never announced).
const creditsLowFraction = creditsLowFractionFromEnv();
const identityUrl = env.string("IDENTITY_URL", "http://127.0.0.1:7073") ?? "";
const ratelimitUrl = env.string("RATELIMIT_URL", "http://127.0.0.1:7072") ?? "";
// The deadline of calls to ratelimit and identity: below the gateway's (5 s), so that a ratelimit that
// does not answer is failed open (or closed) by keys before the gateway gives up on the verification.
const timeoutMs = env.int("RPC_TIMEOUT_MS", 2_000, 1);
// How often verified keys' lastUsedAt is written: one row write per key used in the interval.
const lastUsedFlushMs = env.int("LAST_USED_FLUSH_MS", 1_000);
// Keys held in memory; a key not held costs a PostgreSQL lookup when verified. Bounded by count and by
// the bytes counted for them, so keys with large meta cannot take the process's memory (README: Memory).
const cacheSize = env.int("KEY_CACHE_SIZE", 100_000, 1);
// A literal default (160 MiB, KEY_CACHE_MAX_BYTES), so that deploy/README.md's table can be checked against it.
const cacheMaxBytes = env.int("KEY_CACHE_MAX_BYTES", 167_772_160, MIN_CACHE_BYTES);

// Audit records older than this many days are deleted in the background (packages/runtime/src/audit.ts).
const auditRetentionDays = env.int("AUDIT_RETENTION_DAYS", 365, 1);
const sql = connect(databaseUrl);
await migrate(sql, "keys", keysMigrations);

if (rootKey) {
  const { rootKeyId, created } = await ensureRootKey(sql, rootKey);
  log.info({ rootKeyId, created }, "LATCHKEY_ROOT_KEY is a root key holding *");
}

// Without NATS, caches are invalidated only within this process: run one replica.
const nats = natsUrl ? await NatsBus.connect(natsUrl, log, "keys") : undefined;
const bus = nats ?? new MemoryBus();
// Verifications reach analytics through JetStream; without NATS none are recorded.
let events: JetStreamEventSink | undefined;
if (nats) {
  await ensureEventsStream(nats.nc);
  events = new JetStreamEventSink(nats.nc, log);
}
const spendSql = creditSpendsSql(databaseUrl, asyncCommit);
const deps = createKeysDeps({
  sql,
  bus,
  log,
  // Identities, roles and permissions live in the identity service.
  identity: internalTransport(identityUrl, { auth, timeoutMs }),
  // Named limits of keys and identities are counted by the ratelimit service (one call per batch).
  ratelimit: internalTransport(ratelimitUrl, { auth, timeoutMs, codecs: ratelimitCodecs }),
  ratelimitFailOpen,
  creditsLowFraction,
  lastUsedFlushMs,
  cacheSize,
  cacheMaxBytes,
  ...(events ? { events: events as EventSink } : {}),
  ...(encryptionKey ? { encryptionKey } : {}),
  spendSql,
});
// Due refills every minute, applied by one instance at a time (advisory lock).
const stopRefills = startRefills(sql, { clock: deps.clock, log });
const auditPruner = new AuditPruner(sql, KEYS_AUDIT_TABLE, {
  retentionDays: auditRetentionDays,
  log,
}).start();
const server = await serveRpc(
  keysRoutes(deps),
  port,
  {
    ready: async () => {
      await sql`SELECT 1`;
      return true;
    },
  },
  undefined,
  // VerifyKeyBatch's request decoded by hand (its answer is pre-encoded by the service: verify/batch-wire.ts).
  { codecs: verifyKeyBatchCodecs, auth },
);
log.info({ port: server.port, nats: Boolean(natsUrl) }, "keys service listening");

let stopping = false;
async function stop(signal: string) {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, "keys service stopping");
  await server.close();
  stopRefills();
  await auditPruner.stop();
  await deps.close();
  await events?.flush(5_000);
  events?.close();
  await bus.close();
  await spendSql.end({ timeout: 5 });
  await sql.end({ timeout: 5 });
  process.exit(0);
}
process.once("SIGTERM", () => void stop("SIGTERM"));
process.once("SIGINT", () => void stop("SIGINT"));
