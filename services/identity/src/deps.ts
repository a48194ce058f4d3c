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
import type { IdentityStore } from "./store/identity-store.ts";
import { MemoryIdentityStore } from "./store/memory-identity-store.ts";
import { PostgresIdentityStore } from "./store/postgres-identity-store.ts";

export interface IdentityDeps {
  /** Identities, permissions and roles (PostgreSQL in production, memory in unit tests). */
  store: IdentityStore;
  /** Carries IdentityChanged to every instance that caches identities, roles or permissions (events.ts). */
  bus: Bus;
  /** Timestamps, injected so tests control them. */
  clock: Clock;
  /** Structured logs; secrets are redacted by the logger. */
  log: Logger;
  /** Where identity.created and identity.deleted go (common.v1.DomainEvent, packages/runtime/src/domain-events.ts). */
  events: EventSink;
}

/** For processes that tell no one of identity changes. */
export const noEvents: EventSink = {
  publish() {},
  flush: async () => {},
  stats: () => ({ buffered: 0, published: 0, dropped: 0 }),
};

export interface IdentityDepsOptions {
  sql: Sql;
  bus: Bus;
  clock?: Clock;
  log?: Logger;
  /** Default: no events are published. */
  events?: EventSink;
}

/** Production dependencies: the PostgreSQL store. The database and the bus belong to the caller. */
export function createIdentityDeps(options: IdentityDepsOptions): IdentityDeps {
  return {
    store: new PostgresIdentityStore(options.sql),
    bus: options.bus,
    clock: options.clock ?? systemClock,
    log: options.log ?? createLogger("identity"),
    events: options.events ?? noEvents,
  };
}

/** In-memory dependencies for unit tests and the one-process start; the store is exposed for seeding. */
export function createMemoryIdentityDeps(
  options: { bus?: Bus; clock?: Clock; log?: Logger; events?: EventSink } = {},
): IdentityDeps & { store: MemoryIdentityStore } {
  return {
    store: new MemoryIdentityStore(),
    bus: options.bus ?? new MemoryBus(),
    clock: options.clock ?? systemClock,
    log: options.log ?? createLogger("identity"),
    events: options.events ?? noEvents,
  };
}
