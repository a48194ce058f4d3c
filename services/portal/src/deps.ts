import type { Client, Transport } from "@connectrpc/connect";
import { createClient } from "@connectrpc/connect";
import { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { type Clock, createLogger, type Logger, type Sql, systemClock } from "@latchkey/runtime";
import { DEFAULT_SETTINGS, type PortalSettings } from "./settings.ts";
import { MemoryPortalStore } from "./store/memory-portal-store.ts";
import type { PortalStore } from "./store/portal-store.ts";
import { PostgresPortalStore } from "./store/postgres-portal-store.ts";

export interface PortalDeps {
  /** Portals and sessions (PostgreSQL in production, memory in unit tests). */
  store: PortalStore;
  /** What a session does to keys: listed, created and rerolled through the keys service only. */
  keys: Client<typeof KeysService>;
  /** A session's verifications, through the analytics service. */
  analytics: Client<typeof AnalyticsService>;
  /** Bounds and the code's lifetime (settings.ts). */
  settings: PortalSettings;
  /** Timestamps, injected so tests control them. */
  clock: Clock;
  /** Structured logs; codes and tokens never reach them. */
  log: Logger;
}

export interface PortalDepsOptions {
  /** The keys and analytics services (over HTTP, or localTransport in one process). */
  keys: Transport;
  analytics: Transport;
  settings?: Partial<PortalSettings>;
  clock?: Clock;
  log?: Logger;
}

/** Production dependencies: the PostgreSQL store. The database belongs to the caller. */
export function createPortalDeps(options: PortalDepsOptions & { sql: Sql }): PortalDeps {
  return build(new PostgresPortalStore(options.sql), options);
}

/** In-memory dependencies for unit tests; the store is exposed for seeding. */
export function createMemoryPortalDeps(
  options: PortalDepsOptions,
): PortalDeps & { store: MemoryPortalStore } {
  return build(new MemoryPortalStore(), options);
}

function build<S extends PortalStore>(store: S, options: PortalDepsOptions): PortalDeps & { store: S } {
  return {
    store,
    keys: createClient(KeysService, options.keys),
    analytics: createClient(AnalyticsService, options.analytics),
    settings: { ...DEFAULT_SETTINGS, ...options.settings },
    clock: options.clock ?? systemClock,
    log: options.log ?? createLogger("portal"),
  };
}
