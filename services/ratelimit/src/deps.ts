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
import type { Cluster, Redis } from "ioredis";
import { noEvents, type RatelimitEvents, ratelimitEvents } from "./events.ts";
import { ExceededEvents } from "./exceeded.ts";
import type { MemoryInstance } from "./instances.ts";
import { type Limiter, LocalLimiter } from "./limiter/limiter.ts";
import { type PeerConfig, PeerLimiter } from "./limiter/peer-limiter.ts";
import { RedisLimiter } from "./limiter/redis-limiter.ts";
import { SlidingWindows } from "./limiter/sliding-windows.ts";
import { NamespaceCache } from "./namespaces.ts";
import { OverrideCache } from "./overrides.ts";
import { MemoryRatelimitStore } from "./store/memory-ratelimit-store.ts";
import { PostgresRatelimitStore } from "./store/postgres-ratelimit-store.ts";
import type { RatelimitStore } from "./store/ratelimit-store.ts";

export interface RatelimitDeps {
  store: RatelimitStore; // namespaces and overrides: PostgreSQL, or memory in unit tests
  namespaces: NamespaceCache; // namespaces by name or id, cached (they are never renamed or deleted)
  overrides: OverrideCache; // overrides per namespace, cached until events.ratelimit.overrides_changed
  windows: SlidingWindows; // the counters this replica owns, in memory (unused with Redis)
  limiter: Limiter; // counts checks: here, at the owning replica when peers are configured, or in Redis
  events: RatelimitEvents; // checked to the event sink (analytics), overrides_changed on the bus
  exceeded: ExceededEvents; // ratelimit.exceeded to the event sink, once per counter and window (exceeded.ts)
  clock: Clock; // decides the windows; tests move it
  log: Logger; // causes of internal errors, peer outages
  close(): Promise<void>; // drops bus subscriptions and this process's registration (instances.ts); the bus and the database belong to whoever passed them
}

export interface RatelimitDepsOptions {
  sql: Sql;
  bus: Bus;
  /** Where standalone checks are recorded for analytics (JetStream in production); default: not recorded. */
  events?: EventSink;
  clock?: Clock;
  log?: Logger;
  /** Several replicas sharing one budget (RATELIMIT_PEERS / RATELIMIT_SELF); omitted, counters are local. */
  peers?: PeerConfig;
  /** Counters in Redis or Valkey, shared by every replica (RATELIMIT_STORE=redis); excludes `peers`. */
  redis?: { client: Redis | Cluster; prefix: string };
  /** Most counters held in memory, all workspaces together (env RATELIMIT_MAX_COUNTERS; see README Memory). */
  maxCounters?: number;
  /** Most counters one workspace holds (env RATELIMIT_MAX_COUNTERS_PER_WORKSPACE). */
  maxCountersPerWorkspace?: number;
  /** Most bytes of counters held in memory, all workspaces together (env RATELIMIT_MAX_COUNTER_BYTES). */
  maxCounterBytes?: number;
  /**
   * This process's registration as one counting in its own memory (instances.ts registerMemoryInstance,
   * which main.ts and the all-in-one process call before this), removed by close().
   */
  instance?: MemoryInstance | undefined;
}

/** Production wiring on PostgreSQL; migrations are the caller's (main.ts runs them at start). */
export function createRatelimitDeps(options: RatelimitDepsOptions): RatelimitDeps {
  return buildDeps(new PostgresRatelimitStore(options.sql), options);
}

/** Everything in memory, for unit tests and embedding; pass a shared bus or store to model several replicas. */
export function createMemoryRatelimitDeps(
  options: Partial<Omit<RatelimitDepsOptions, "sql">> & { store?: RatelimitStore } = {},
): RatelimitDeps {
  return buildDeps(options.store ?? new MemoryRatelimitStore(), {
    ...options,
    bus: options.bus ?? new MemoryBus(),
    log: options.log ?? createLogger("ratelimit", "silent"),
  });
}

function buildDeps(store: RatelimitStore, options: Omit<RatelimitDepsOptions, "sql">): RatelimitDeps {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? createLogger("ratelimit");
  const windows = new SlidingWindows(clock, {
    maxCounters: options.maxCounters,
    maxCountersPerWorkspace: options.maxCountersPerWorkspace,
    maxBytes: options.maxCounterBytes,
    log,
  });
  const overrides = new OverrideCache(store, options.bus);
  if (options.peers && options.redis) throw new Error("peers and redis exclude each other");
  const limiter = options.redis
    ? new RedisLimiter(options.redis.client, {
        prefix: options.redis.prefix,
        maxCountersPerWorkspace: options.maxCountersPerWorkspace,
        // A clock given by the caller (tests) decides the windows; otherwise Redis's, one for every replica.
        ...(options.clock ? { clock: options.clock } : {}),
        log,
      })
    : options.peers
      ? new PeerLimiter(options.peers, windows, log)
      : new LocalLimiter(windows);
  return {
    store,
    namespaces: new NamespaceCache(store),
    overrides,
    windows,
    limiter,
    events: ratelimitEvents(options.bus, options.events),
    exceeded: new ExceededEvents(options.events ?? noEvents, clock),
    clock,
    log,
    async close() {
      overrides.close();
      await limiter.close();
      await options.instance?.close();
    },
  };
}
