import {
  type Bus,
  type Clock,
  createLogger,
  type EventSink,
  type Logger,
  MemoryBus,
  type Sql,
  systemClock,
} from "@latchkey/runtime";
import { invalidateOnKeyChanges, noEvents } from "./events.ts";
import { KeyCache } from "./key-cache.ts";
import type { KeysStore } from "./store/keys-store.ts";
import { MemoryKeysStore } from "./store/memory-keys-store.ts";
import { PostgresKeysStore } from "./store/postgres-keys-store.ts";
import { KeyVault } from "./vault.ts";

export interface KeysDeps {
  /** APIs, keys and root keys (PostgreSQL in production, memory in unit tests). */
  store: KeysStore;
  /** Carries KeyChanged between instances so each drops what it cached (events.ts). */
  bus: Bus;
  /** Where each verification is recorded for analytics (KeyVerified); off the request path. */
  events: EventSink;
  /** Keys by hash for verification, invalidated through the bus. */
  keyCache: KeyCache;
  /** Time for expiry and timestamps, injected so tests control it. */
  clock: Clock;
  /** Structured logs; secrets are redacted by the logger. */
  log: Logger;
  /** Seals and opens recoverable keys' plaintexts; absent when no encryption key is configured. */
  vault: KeyVault | undefined;
  /** Stops listening to the bus. The bus and the database belong to the caller. */
  close(): void;
}

export interface KeysDepsOptions {
  sql: Sql;
  bus: Bus;
  /** Default: no events are recorded. */
  events?: EventSink;
  clock?: Clock;
  log?: Logger;
  /** Most keys held in the verification cache. */
  cacheSize?: number;
  /** 32 bytes (env LATCHKEY_ENCRYPTION_KEY, base64). Without it keys cannot be created recoverable. */
  encryptionKey?: Buffer;
}

/** Production dependencies: the PostgreSQL store and a cache kept fresh through the bus. */
export function createKeysDeps(options: KeysDepsOptions): KeysDeps {
  return assemble(new PostgresKeysStore(options.sql), options);
}

/** In-memory dependencies for unit tests; the store is exposed for seeding. */
export function createMemoryKeysDeps(
  options: { bus?: Bus; events?: EventSink; clock?: Clock; log?: Logger; encryptionKey?: Buffer } = {},
): KeysDeps & { store: MemoryKeysStore } {
  const store = new MemoryKeysStore();
  return { ...assemble(store, { bus: options.bus ?? new MemoryBus(), ...options }), store };
}

function assemble(
  store: KeysStore,
  options: {
    bus: Bus;
    events?: EventSink;
    clock?: Clock;
    log?: Logger;
    cacheSize?: number;
    encryptionKey?: Buffer;
  },
): KeysDeps {
  const clock = options.clock ?? systemClock;
  const keyCache = new KeyCache((hash) => store.findKeyByHash(hash), clock, {
    ...(options.cacheSize ? { max: options.cacheSize } : {}),
  });
  const unsubscribe = invalidateOnKeyChanges(options.bus, keyCache);
  return {
    store,
    bus: options.bus,
    events: options.events ?? noEvents,
    keyCache,
    clock,
    log: options.log ?? createLogger("keys"),
    vault: options.encryptionKey ? new KeyVault(options.encryptionKey) : undefined,
    close: unsubscribe,
  };
}
