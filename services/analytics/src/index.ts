export { BufferedIngest, type BufferedIngestOptions } from "./buffered-ingest.ts";
export { openClickHouse } from "./clickhouse.ts";
export { type ConsumerOptions, type ConsumerStats, type RunningConsumer, startConsumer } from "./consumer.ts";
export {
  type AnalyticsDeps,
  createAnalyticsDeps,
  createEmbeddedAnalyticsDeps,
  createMemoryAnalyticsDeps,
  type EmbeddedAnalyticsDeps,
  type Ingest,
  ingestInto,
} from "./deps.ts";
export { KEY_VERIFIED, RATELIMIT_CHECKED } from "./events.ts";
export {
  analyticsMigrations,
  analyticsPostgresMigrations,
  type ClickHouseMigration,
  migrateClickHouse,
} from "./migrations.ts";
export { analyticsRoutes } from "./routes.ts";
export type { AnalyticsStore } from "./store/analytics-store.ts";
export { ClickHouseAnalyticsStore } from "./store/clickhouse-analytics-store.ts";
export { MemoryAnalyticsStore } from "./store/memory-analytics-store.ts";
export { PostgresAnalyticsStore } from "./store/postgres-analytics-store.ts";
