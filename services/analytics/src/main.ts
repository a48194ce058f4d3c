import { createLogger, env, serveRpc } from "@latchkey/runtime";
import { connect } from "@nats-io/transport-node";
import { openClickHouse } from "./clickhouse.ts";
import { startConsumer, watchConsumer } from "./consumer.ts";
import { createAnalyticsDeps } from "./deps.ts";
import { migrateClickHouse } from "./migrations.ts";
import { analyticsRoutes } from "./routes.ts";

// The analytics service as its own process, configured by env.
const log = createLogger("analytics", env.string("LOG_LEVEL", "info"));
const { client: clickhouse, database } = await openClickHouse(env.required("CLICKHOUSE_URL"));
const applied = await migrateClickHouse(clickhouse);
log.info({ database, applied }, "ClickHouse schema up to date");

const nats = await connect({
  servers: env.required("NATS_URL"),
  name: "analytics",
  maxReconnectAttempts: -1,
});
const deps = createAnalyticsDeps({ nats, clickhouse, log });
// ANALYTICS_CONSUMER names the durable consumer (one per deployment; replicas share it and split the work).
const consumer = await startConsumer({
  nats,
  store: deps.store,
  log,
  durable: env.string("ANALYTICS_CONSUMER", "analytics")!,
  startAt: env.string("ANALYTICS_START_AT") === "new" ? "new" : "all",
});
watchConsumer(consumer);
const server = await serveRpc(analyticsRoutes(deps), env.int("PORT", 7074), { ready: deps.ready });
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
  process.exit(0);
}
process.once("SIGTERM", () => void stop("SIGTERM"));
process.once("SIGINT", () => void stop("SIGINT"));
