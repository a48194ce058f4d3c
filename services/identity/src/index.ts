export {
  createIdentityDeps,
  createMemoryIdentityDeps,
  type IdentityDeps,
  type IdentityDepsOptions,
} from "./deps.ts";
export { IDENTITY_CHANGED, type IdentityChange, onIdentityChanged } from "./events.ts";
export { identityMigrations } from "./migrations.ts";
export {
  evaluatePermissionQuery,
  MAX_PERMISSION_QUERY_LENGTH,
  type PermissionQuery,
  parsePermissionQuery,
} from "./permission-query.ts";
export { identityRoutes } from "./routes.ts";
