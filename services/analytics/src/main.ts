import { createLogger, env, InternalAuth, serveRpc } from "@latchkey/runtime";
import { connect } from "@nats-io/transport-node";
import { openClickHouse, openClickHouseQueryUser, type QueryRunner } from "./clickhouse.ts";
import { startConsumer, watchConsumer } from "./consumer.ts";
import { createAnalyticsDeps } from "./deps.ts";
import { migrateClickHouse } from "./migrations.ts";
import { analyticsRoutes } from "./routes.ts";

// The analytics service as its own process, configured by env.
// Every setting is read and checked before anything connects or migrates.
const log = createLogger("analytics", env.string("LOG_LEVEL", "info"));
const port = env.int("PORT", 7074);
// Queries are served only when the gateway signed them.
const auth = InternalAuth.fromEnv();
const clickhouseUrl = env.required("CLICKHOUSE_URL");
// The read-only ClickHouse user that runs tenants' raw SQL (docs/analytics-queries.md); separate from
// CLICKHOUSE_URL's user, which migrates and ingests.
const queryUrl = env.string("CLICKHOUSE_QUERY_URL");
const natsUrl = env.required("NATS_URL");
// ANALYTICS_CONSUMER names the durable consumer (one per deployment; replicas share it and split the work).
const durable = env.string("ANALYTICS_CONSUMER", "analytics")!;
// Where a consumer that does not exist yet starts: the whole stream, or only events from now on.
const startAt = env.string("ANALYTICS_START_AT", "all");
if (startAt !== "all" && startAt !== "new") {
  log.fatal(`ANALYTICS_START_AT must be all or new, got '${startAt}'`);
  process.exit(1);
}
const { client: clickhouse, database } = await openClickHouse(clickhouseUrl);
let queryRunner: QueryRunner | undefined;
if (queryUrl) queryRunner = openClickHouseQueryUser(queryUrl);
else {
  log.warn(
    "CLICKHOUSE_QUERY_URL is not set: raw analytics queries run as CLICKHOUSE_URL's user with readonly=2 and per-query limits; set it to a read-only user limited to the analytics database (docs/analytics-queries.md)",
  );
}
const applied = await migrateClickHouse(clickhouse);
log.info({ database, applied }, "ClickHouse schema up to date");

const nats = await connect({
  servers: natsUrl,
  name: "analytics",
  maxReconnectAttempts: -1,
});
const deps = createAnalyticsDeps({ nats, clickhouse, queryRunner, log });
const consumer = await startConsumer({ nats, store: deps.store, log, durable, startAt });
watchConsumer(consumer);
const server = await serveRpc(analyticsRoutes(deps), port, { ready: deps.ready }, undefined, { auth });
log.info({ port: server.port }, "analytics service listening");

let stopping = false;
async function stop(signal: string) {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, "analytics service stopping");
  // Stop fetching, insert and acknowledge what is held, then close.
  await consumer.stop();
  await server.close();
  await nats.drain();
  await clickhouse.close();
  await queryRunner?.client.close();
  process.exit(0);
}
process.once("SIGTERM", () => void stop("SIGTERM"));
process.once("SIGINT", () => void stop("SIGINT"));
