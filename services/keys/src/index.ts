export * from "./admin.ts";
export { creditsLowFractionFromEnv } from "./credit-events.ts";
export {
  createKeysDeps,
  creditSpendsSql,
  type KeysDeps,
  type KeysDepsOptions,
  MIN_CACHE_BYTES,
} from "./deps.ts";
export { KEY_CHANGED } from "./events.ts";
export { scanningKeysFromEnv } from "./leaks/github-keys.ts";
export { keysMigrations } from "./migrations.ts";
export { startExpiringNotices } from "./notices/expiring.ts";
export { applyDueRefills, latestRefillAt, startRefills } from "./refills.ts";
export { keysRoutes } from "./routes.ts";
export { KEYS_AUDIT_TABLE } from "./store/postgres-keys-store.ts";
export { KeyVault } from "./vault.ts";
export { IDENTITY_CACHE_MAX_BYTES } from "./verify/identity-cache.ts";
export { KEY_CACHE_MAX_BYTES } from "./verify/key-cache.ts";
