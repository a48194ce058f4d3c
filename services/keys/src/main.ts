import { verifyKeyBatchCodecs } from "@latchkey/proto/codecs/keys";
import { ratelimitCodecs } from "@latchkey/proto/codecs/ratelimit";
import { env, runService } from "@latchkey/runtime";
import { ensureRootKey } from "./admin.ts";
import { creditsLowFractionFromEnv } from "./credit-events.ts";
import { createKeysDeps, creditSpendsSql, MIN_CACHE_BYTES } from "./deps.ts";
import { scanningKeysFromEnv } from "./leaks/github-keys.ts";
import { keysMigrations } from "./migrations.ts";
import { startExpiringNotices } from "./notices/expiring.ts";
import { startRefills } from "./refills.ts";
import { keysRoutes } from "./routes.ts";

// The keys service as its own process: runService reads and connects what its row of
// packages/runtime/src/contexts.ts names (PostgreSQL, NATS, the ratelimit and identity services);
// the settings below are its own, checked before anything connects or migrates.
await runService("keys", {
  migrations: keysMigrations,
  settings() {
    // Without it, keys cannot be created recoverable (PRECONDITION_FAILED); never logged.
    const encryptionKeyText = env.string("LATCHKEY_ENCRYPTION_KEY");
    const encryptionKey = encryptionKeyText ? Buffer.from(encryptionKeyText, "base64") : undefined;
    if (encryptionKey && encryptionKey.length !== 32) {
      throw new Error(
        "LATCHKEY_ENCRYPTION_KEY must be the base64 of 32 random bytes (openssl rand -base64 32)",
      );
    }
    return {
      rootKey: env.string("LATCHKEY_ROOT_KEY"),
      encryptionKey,
      // When the ratelimit service cannot be asked: true (default, as Unkey) lets verifications
      // through, false answers 503 so no key outruns its named limits during an outage.
      ratelimitFailOpen: env.bool("RATELIMIT_FAIL_OPEN", true),
      // true: credit spends commit without waiting for the disk (exact; a PostgreSQL crash forgets its last moments).
      asyncCommit: env.bool("CREDITS_ASYNC_COMMIT", false),
      // credits.low below this share of a key's refill amount or given balance (0: never announced).
      creditsLowFraction: creditsLowFractionFromEnv(),
      // The deadline of calls to ratelimit and identity: below the gateway's (5 s), so that a ratelimit that
      // does not answer is failed open (or closed) by keys before the gateway gives up on the verification.
      timeoutMs: env.int("RPC_TIMEOUT_MS", 2_000, 1),
      // How often verified keys' lastUsedAt is written: one row write per key used in the interval.
      lastUsedFlushMs: env.int("LAST_USED_FLUSH_MS", 1_000),
      // Keys held in memory; a key not held costs a PostgreSQL lookup when verified. Bounded by count and by
      // the bytes counted for them, so keys with large meta cannot take the process's memory (README: Memory).
      cacheSize: env.int("KEY_CACHE_SIZE", 100_000, 1),
      // A literal default (160 MiB, KEY_CACHE_MAX_BYTES), so that deploy/README.md's table can be checked against it.
      cacheMaxBytes: env.int("KEY_CACHE_MAX_BYTES", 167_772_160, MIN_CACHE_BYTES),
      // GitHub's secret-scanning public keys (a URL or a file); unset: GitHub's reports are refused (412).
      secretScanningKeys: scanningKeysFromEnv(env.string("SECRET_SCANNING_KEYS")),
      // How often key.expiring looks for keys coming due (each run goes until none is left).
      expiringNoticeMs: env.int("EXPIRING_NOTICE_INTERVAL_MS", 60_000, 1_000),
    };
  },
  async start(s, ctx) {
    const { log, sql } = ctx;
    const rootKey = s.rootKey;
    if (rootKey) {
      const { rootKeyId, created } = await ctx.until("PostgreSQL", () => ensureRootKey(sql, rootKey));
      log.info({ rootKeyId, created }, "LATCHKEY_ROOT_KEY is a root key holding *");
    }
    // Without NATS, caches are invalidated only within this process (run one replica), and no
    // verifications reach analytics.
    const events = ctx.events();
    const spendSql = creditSpendsSql(ctx.databaseUrl, s.asyncCommit);
    ctx.onStop(() => spendSql.end({ timeout: 5 }));
    const deps = createKeysDeps({
      sql,
      bus: ctx.bus,
      log,
      // Identities, roles and permissions live in the identity service.
      identity: ctx.transport("identity", { timeoutMs: s.timeoutMs }),
      // Named limits of keys and identities are counted by the ratelimit service (one call per batch).
      ratelimit: ctx.transport("ratelimit", { timeoutMs: s.timeoutMs, codecs: ratelimitCodecs }),
      ratelimitFailOpen: s.ratelimitFailOpen,
      creditsLowFraction: s.creditsLowFraction,
      lastUsedFlushMs: s.lastUsedFlushMs,
      cacheSize: s.cacheSize,
      cacheMaxBytes: s.cacheMaxBytes,
      ...(s.secretScanningKeys ? { secretScanningKeys: s.secretScanningKeys } : {}),
      ...(events ? { events } : {}),
      ...(s.encryptionKey ? { encryptionKey: s.encryptionKey } : {}),
      spendSql,
    });
    ctx.onStop(() => deps.close());
    // Due refills every minute, applied by one instance at a time (advisory lock).
    ctx.onStop(startRefills(sql, { clock: deps.clock, log }));
    // key.expiring every minute, on every replica: key_notices lets one announce each expiry.
    ctx.onStop(
      startExpiringNotices(sql, { clock: deps.clock, log, events: deps.events, everyMs: s.expiringNoticeMs }),
    );
    return {
      routes: keysRoutes(deps),
      // VerifyKeyBatch's request decoded by hand (its answer is pre-encoded by the service: verify/batch-wire.ts).
      codecs: verifyKeyBatchCodecs,
      about: { nats: ctx.nats !== undefined },
    };
  },
});
