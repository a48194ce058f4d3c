import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import {
  type Bus,
  type Clock,
  connect,
  createLogger,
  type EventSink,
  type Logger,
  type Sql,
  systemClock,
} from "@latchkey/runtime";
import { CreditEvents, DEFAULT_LOW_FRACTION } from "./credit-events.ts";
import { DeletedGrants } from "./deleted-grants.ts";
import { invalidateOnKeyChanges, noEvents } from "./events.ts";
import { LastUsed } from "./last-used.ts";
import { type ScanningKeySource, ScanningKeys } from "./leaks/github-keys.ts";
import { LeakQueue } from "./leaks/leak-queue.ts";
import type { PolicyStore } from "./store/forward-auth-policy-store.ts";
import type { CachedKey, KeysStore } from "./store/keys-store.ts";
import { PostgresPolicyStore } from "./store/postgres-forward-auth-policy-store.ts";
import { PostgresKeysStore } from "./store/postgres-keys-store.ts";
import { KeyVault } from "./vault.ts";
import { grantsBytes, IdentityCache } from "./verify/identity-cache.ts";
import { KeyCache, lookupTogether } from "./verify/key-cache.ts";
import { VerificationMemos } from "./verify/memos.ts";
import { SpendQueue } from "./verify/spend-collector.ts";

export interface KeysDeps {
  /** APIs, keys and root keys (PostgreSQL in production, memory in unit tests). */
  store: KeysStore;
  /** The workspaces' forward-auth policies, in match order (PostgreSQL in production, memory in unit tests). */
  policies: PolicyStore;
  /** Carries KeyChanged between instances so each drops what it cached (events.ts). */
  bus: Bus;
  /** Where each verification is recorded for analytics (KeyVerified); off the request path. */
  events: EventSink;
  /** Every credit spend of verifications, few statements for many (group commit). */
  spends: SpendQueue;
  /** credits.low and credits.exhausted to `events`, once per key and credit period (credit-events.ts). */
  creditEvents: CreditEvents;
  /** Keys by workspace and hash for verification, invalidated through the bus. */
  keyCache: KeyCache;
  /** Time for expiry and timestamps, injected so tests control it. */
  clock: Clock;
  /** Structured logs; secrets are redacted by the logger. */
  log: Logger;
  /** Seals and opens recoverable keys' plaintexts; absent when no encryption key is configured. */
  vault: KeyVault | undefined;
  /** The identity service: identities linked by externalId, roles and permissions by name and slug. */
  identity: Client<typeof IdentityService>;
  /** Roles, permissions and identities for verification, dropped on events.identity.changed. */
  identityCache: IdentityCache;
  /** Takes roles and permissions the identity service deleted off every key (events.identity.changed). */
  deletedGrants: DeletedGrants;
  /** The ratelimit service: a verification's named limits, one CheckNamedLimits call per batch. */
  ratelimit: Client<typeof RatelimitService>;
  /**
   * When the ratelimit service cannot be asked: true lets the verification
   * through (logged), false answers UNAVAILABLE (env RATELIMIT_FAIL_OPEN).
   */
  ratelimitFailOpen: boolean;
  /** What verification works out once and reuses (parsed queries, verdicts, answer parts), for this instance. */
  verification: VerificationMemos;
  /** Each key's last verification, noted in memory and written once a second. */
  lastUsed: LastUsed;
  /** keys.reportLeak's work, done after its answer (leaks/leak-queue.ts). */
  leakReports: LeakQueue;
  /** GitHub's secret-scanning public keys (SECRET_SCANNING_KEYS); absent: GitHub's reports are refused. */
  githubKeys: ScanningKeys | undefined;
  /** Stops listening to the bus and finishes work under way. The bus and the database belong to the caller. */
  close(): Promise<void>;
}

export interface KeysDepsOptions {
  sql: Sql;
  /**
   * The one connection credit spends run on (creditSpendsSql), two statements
   * pipelined on it at once (SpendQueue). Default: `sql`, one statement at a time.
   */
  spendSql?: Sql;
  bus: Bus;
  /** Default: no events are recorded. */
  events?: EventSink;
  clock?: Clock;
  log?: Logger;
  /** Most keys held in the verification cache (env KEY_CACHE_SIZE, default 100,000). */
  cacheSize?: number;
  /** Most bytes counted for the verification cache's keys (env KEY_CACHE_MAX_BYTES, default 160 MiB). */
  cacheMaxBytes?: number;
  /** Most bytes counted for cached roles, permissions and identities (default IDENTITY_CACHE_MAX_BYTES, 64 MiB). */
  identityCacheMaxBytes?: number;
  /** 32 bytes (env LATCHKEY_ENCRYPTION_KEY, base64). Without it keys cannot be created recoverable. */
  encryptionKey?: Buffer;
  /**
   * The identity service: its Connect client's transport (main.ts: internalTransport(IDENTITY_URL)).
   * Keys never builds one: the all-in-one process and the tests (testing/keys-deps.ts) hand theirs in.
   */
  identity: Transport;
  /** The ratelimit service, likewise (main.ts: internalTransport(RATELIMIT_URL)). */
  ratelimit: Transport;
  /** How often verified keys' lastUsedAt is written. Default 1000 ms. */
  lastUsedFlushMs?: number;
  /**
   * Named limits when the ratelimit service cannot be asked: true (the
   * default, as Unkey) lets verifications through; false fails them
   * with UNAVAILABLE (503), so no key outruns its limits during an outage.
   */
  ratelimitFailOpen?: boolean;
  /** CREDITS_LOW_FRACTION: credits.low below this share of a key's refill amount or given balance; 0: off. Default 0.1. */
  creditsLowFraction?: number;
  /** SECRET_SCANNING_KEYS: where GitHub's secret-scanning public keys are (leaks/github-keys.ts). */
  secretScanningKeys?: ScanningKeySource;
}

/** The least KEY_CACHE_MAX_BYTES accepts: less would hold next to nothing. */
export const MIN_CACHE_BYTES = 1024 * 1024;

/** Production dependencies: the PostgreSQL store and a cache kept fresh through the bus. */
export function createKeysDeps(options: KeysDepsOptions): KeysDeps {
  const store = new PostgresKeysStore(options.sql);
  const spends = options.spendSql
    ? { spendStore: new PostgresKeysStore(options.spendSql), spendDepth: SPENDS_OUT }
    : {};
  return assembleKeysDeps(store, {
    ...options,
    ...spends,
    policyStore: new PostgresPolicyStore(options.sql),
  });
}

/** The dependencies around a store, whichever it is (testing/keys-deps.ts assembles them around the in-memory one). */
export function assembleKeysDeps(
  store: KeysStore,
  options: {
    bus: Bus;
    events?: EventSink;
    clock?: Clock;
    log?: Logger;
    cacheSize?: number;
    cacheMaxBytes?: number;
    identityCacheMaxBytes?: number;
    encryptionKey?: Buffer;
    identity: Transport;
    ratelimit: Transport;
    lastUsedFlushMs?: number;
    ratelimitFailOpen?: boolean;
    /** Where credit spends are decided; default `store`. */
    spendStore?: Pick<KeysStore, "spendCreditsGroups">;
    /** Spend statements out at once (SpendQueue's depth); default 1. */
    spendDepth?: number;
    creditsLowFraction?: number;
    secretScanningKeys?: ScanningKeySource;
    /** The store of forward-auth policies, beside `store`. */
    policyStore: PolicyStore;
  },
): KeysDeps {
  const clock = options.clock ?? systemClock;
  // A batch's cache misses are looked up in one query.
  const keyCache = new KeyCache(
    lookupTogether((lookups) => store.findKeysByHash(lookups)),
    clock,
    {
      ...(options.cacheSize ? { max: options.cacheSize } : {}),
      ...(options.cacheMaxBytes ? { maxBytes: options.cacheMaxBytes } : {}),
    },
  );
  const unsubscribe = invalidateOnKeyChanges(options.bus, keyCache);
  const identity = createClient(IdentityService, options.identity);
  const identityCache = new IdentityCache(identity, options.bus, {
    clock,
    ...(options.identityCacheMaxBytes ? { maxBytes: options.identityCacheMaxBytes } : {}),
    // A key's grants live as long as its cached record: counted with it. Verification resolves
    // grants only for the records the key cache hands it.
    onGrants: (key, grants) => keyCache.charge(key as CachedKey, "grants", grantsBytes(grants)),
  });
  const log = options.log ?? createLogger("keys");
  const deletedGrants = new DeletedGrants({ store, bus: options.bus, keyCache, clock, log });
  const lastUsed = new LastUsed(store, log, options.lastUsedFlushMs);
  const spends = new SpendQueue(
    options.spendStore ?? store,
    clock,
    options.spendDepth,
    options.creditsLowFraction ?? DEFAULT_LOW_FRACTION,
  );
  const leakReports = new LeakQueue(log);
  return {
    store,
    policies: options.policyStore,
    bus: options.bus,
    events: options.events ?? noEvents,
    spends,
    creditEvents: new CreditEvents(options.events ?? noEvents),
    keyCache,
    clock,
    log,
    vault: options.encryptionKey ? new KeyVault(options.encryptionKey) : undefined,
    identity,
    identityCache,
    deletedGrants,
    ratelimit: createClient(RatelimitService, options.ratelimit),
    ratelimitFailOpen: options.ratelimitFailOpen ?? true,
    verification: new VerificationMemos(keyCache),
    lastUsed,
    leakReports,
    githubKeys: options.secretScanningKeys ? new ScanningKeys(options.secretScanningKeys, clock) : undefined,
    async close() {
      await leakReports.settled();
      unsubscribe();
      identityCache.close();
      await deletedGrants.close();
      await lastUsed.close();
      spends.close();
    },
  };
}

/**
 * Spend statements out at once on creditSpendsSql's connection: one more than
 * one lets a statement be planned while the other commits; more make smaller
 * statements and more commits for the same spends (measured:
 * docs/architecture.md, Measured settings).
 */
const SPENDS_OUT = 2;

/**
 * The connection credit spends run on: one, so the statements pipelined on it
 * are decided in the order they were asked. With `asyncCommit`
 * (CREDITS_ASYNC_COMMIT=true) it commits with synchronous_commit=off, so a
 * spend answers once PostgreSQL has applied it, without waiting for its WAL to
 * reach the disk. Exact all the same (the row lock still orders every spend);
 * what it gives up is durability across a crash of PostgreSQL itself, which
 * forgets the spends of its last moments (up to 3 x wal_writer_delay, 0.6 s by
 * default): those verifications were answered, their credits come back. The
 * default commits every spend durably before it answers.
 */
export function creditSpendsSql(url: string, asyncCommit: boolean): Sql {
  return connect(url, { max: 1, ...(asyncCommit ? { settings: { synchronous_commit: "off" } } : {}) });
}
