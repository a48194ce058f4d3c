import { createRouterTransport, type Transport } from "@connectrpc/connect";
import { createIdentityDeps, createMemoryIdentityDeps, identityRoutes } from "@latchkey/identity";
import { createMemoryRatelimitDeps, ratelimitRoutes } from "@latchkey/ratelimit";
import { type Bus, type Clock, type EventSink, type Logger, MemoryBus, type Sql } from "@latchkey/runtime";
import { assembleKeysDeps, createKeysDeps, type KeysDeps } from "../src/deps.ts";
import { MemoryPolicyStore } from "../src/store/memory-forward-auth-policy-store.ts";
import { MemoryKeysStore } from "../src/store/memory-keys-store.ts";

/**
 * The identity and ratelimit services in this process, for tests: production keys reaches them only
 * through their Connect clients (main.ts), and the all-in-one process wires its own.
 */

/** The identity service over `sql` (its migrations applied) and counters in memory, as keys' transports. */
export function inProcessServices(options: { sql: Sql; bus: Bus; clock?: Clock; log?: Logger }): {
  identity: Transport;
  ratelimit: Transport;
} {
  const { clock, log } = clockAndLog(options);
  return {
    identity: createRouterTransport(
      identityRoutes(
        createIdentityDeps({
          sql: options.sql,
          bus: options.bus,
          ...(clock ? { clock } : {}),
          ...(log ? { log: log.child({ service: "identity" }) } : {}),
        }),
      ),
    ),
    ratelimit: memoryRatelimit(options),
  };
}

/** Production dependencies over a test database, the identity and ratelimit services in process. */
export function keysDepsOverDatabase(sql: Sql, bus: Bus, log?: Logger): KeysDeps {
  return createKeysDeps({
    sql,
    bus,
    ...(log ? { log } : {}),
    ...inProcessServices({ sql, bus, ...(log ? { log } : {}) }),
  });
}

/** In-memory dependencies for unit tests; the store is exposed for seeding. */
export function createMemoryKeysDeps(
  options: {
    bus?: Bus;
    events?: EventSink;
    clock?: Clock;
    log?: Logger;
    encryptionKey?: Buffer;
    /** Default: a fresh in-memory identity service on the same bus. */
    identity?: Transport;
    /** Default: a fresh in-memory ratelimit service on the same clock. */
    ratelimit?: Transport;
    lastUsedFlushMs?: number;
    ratelimitFailOpen?: boolean;
    cacheSize?: number;
    cacheMaxBytes?: number;
    identityCacheMaxBytes?: number;
    creditsLowFraction?: number;
  } = {},
): KeysDeps & { store: MemoryKeysStore } {
  const store = new MemoryKeysStore();
  const bus = options.bus ?? new MemoryBus();
  const { clock, log } = clockAndLog(options);
  const identity =
    options.identity ??
    createRouterTransport(
      identityRoutes(
        createMemoryIdentityDeps({
          bus,
          ...(clock ? { clock } : {}),
          ...(log ? { log: log.child({ service: "identity" }) } : {}),
        }),
      ),
    );
  const ratelimit = options.ratelimit ?? memoryRatelimit(options);
  const policyStore = new MemoryPolicyStore(store.audit);
  return { ...assembleKeysDeps(store, { ...options, bus, identity, ratelimit, policyStore }), store };
}

function memoryRatelimit(options: { clock?: Clock; log?: Logger }): Transport {
  const { clock, log } = clockAndLog(options);
  return createRouterTransport(
    ratelimitRoutes(
      createMemoryRatelimitDeps({
        ...(clock ? { clock } : {}),
        ...(log ? { log: log.child({ service: "ratelimit" }) } : {}),
      }),
    ),
  );
}

function clockAndLog(options: { clock?: Clock; log?: Logger }): { clock?: Clock; log?: Logger } {
  return {
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.log ? { log: options.log } : {}),
  };
}
