import { randomBytes } from "node:crypto";
import { type Clock, createLogger, type Logger, type Sql, systemClock } from "@latchkey/runtime";
import { SecretVault } from "./secret.ts";
import { DEFAULT_SETTINGS, type WebhookSettings } from "./settings.ts";
import { MemoryWebhookStore } from "./store/memory-webhook-store.ts";
import { PostgresWebhookStore } from "./store/postgres-webhook-store.ts";
import type { WebhookStore } from "./store/webhook-store.ts";

export interface WebhookDeps {
  /** Webhooks, deliveries and attempts (PostgreSQL in production, memory in unit tests). */
  store: WebhookStore;
  /** Seals and opens signing secrets (secret.ts). */
  vault: SecretVault;
  /** Retries, timeouts, limits and the private-address rule (settings.ts). */
  settings: WebhookSettings;
  /** Timestamps, injected so tests control them. */
  clock: Clock;
  /** Structured logs; secrets never reach them. */
  log: Logger;
}

export interface WebhookDepsOptions {
  sql: Sql;
  /** The key-encryption key (LATCHKEY_ENCRYPTION_KEY, 32 bytes). */
  encryptionKey: Buffer;
  settings?: Partial<WebhookSettings>;
  clock?: Clock;
  log?: Logger;
}

/** Production dependencies: the PostgreSQL store. The database belongs to the caller. */
export function createWebhookDeps(options: WebhookDepsOptions): WebhookDeps {
  const settings = { ...DEFAULT_SETTINGS, ...options.settings };
  return {
    store: new PostgresWebhookStore(options.sql, { maxPendingPerWorkspace: settings.maxPendingPerWorkspace }),
    vault: new SecretVault(options.encryptionKey),
    settings,
    clock: options.clock ?? systemClock,
    log: options.log ?? createLogger("webhooks"),
  };
}

/** In-memory dependencies for unit tests; the store is exposed for seeding. */
export function createMemoryWebhookDeps(
  options: { settings?: Partial<WebhookSettings>; clock?: Clock; log?: Logger } = {},
): WebhookDeps & { store: MemoryWebhookStore } {
  const settings = { ...DEFAULT_SETTINGS, ...options.settings };
  return {
    store: new MemoryWebhookStore({ maxPendingPerWorkspace: settings.maxPendingPerWorkspace }),
    vault: new SecretVault(randomBytes(32)),
    settings,
    clock: options.clock ?? systemClock,
    log: options.log ?? createLogger("webhooks"),
  };
}
