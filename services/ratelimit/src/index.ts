export {
  createMemoryRatelimitDeps,
  createRatelimitDeps,
  type RatelimitDeps,
  type RatelimitDepsOptions,
} from "./deps.ts";
export {
  type MemoryInstance,
  registerMemoryInstance,
  UnsharedMemoryError,
} from "./instances.ts";
export type { Limiter } from "./limiter/limiter.ts";
export type { PeerConfig } from "./limiter/peer-limiter.ts";
export type { CounterCheck, CounterOutcome } from "./limiter/sliding-windows.ts";
export { ratelimitMigrations } from "./migrations.ts";
export { checkNamedLimits, type NamedLimitCheck } from "./named-limits.ts";
export { ratelimitRoutes } from "./routes.ts";
export { RATELIMIT_AUDIT_TABLE } from "./store/postgres-ratelimit-store.ts";
