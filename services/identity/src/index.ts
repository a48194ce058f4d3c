export {
  createIdentityDeps,
  createMemoryIdentityDeps,
  type IdentityDeps,
  type IdentityDepsOptions,
} from "./deps.ts";
export type { IdentityChange } from "./events.ts";
export { identityMigrations } from "./migrations.ts";
export { identityRoutes } from "./routes.ts";
export { IDENTITY_AUDIT_TABLE } from "./store/postgres-identity-store.ts";
