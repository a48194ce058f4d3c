export * from "./admin.ts";
export {
  createKeysDeps,
  createMemoryKeysDeps,
  creditSpendsSql,
  type KeysDeps,
  type KeysDepsOptions,
} from "./deps.ts";
export { KEY_CHANGED } from "./events.ts";
export { keysMigrations } from "./migrations.ts";
export { applyDueRefills, latestRefillAt, startRefills } from "./refills.ts";
export { keysRoutes } from "./routes.ts";
export { KeyVault } from "./vault.ts";
