export { createMemoryPortalDeps, createPortalDeps, type PortalDeps, type PortalDepsOptions } from "./deps.ts";
export { portalMigrations } from "./migrations.ts";
export { portalRoutes } from "./routes.ts";
export { type PortalSettings, portalSettingsFromEnv } from "./settings.ts";
export { PORTAL_AUDIT_TABLE } from "./store/postgres-portal-store.ts";
