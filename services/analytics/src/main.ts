import { env, runService } from "@latchkey/runtime";
import { openClickHouse, openClickHouseQueryUser } from "./clickhouse.ts";
import { startConsumer, watchConsumer } from "./consumer.ts";
import { createAnalyticsDeps, queryLimitsFromEnv } from "./deps.ts";
import { migrateClickHouse } from "./migrations.ts";
import { analyticsRoutes } from "./routes.ts";

// The analytics service as its own process: runService reads and connects what its row of
// packages/runtime/src/contexts.ts names (NATS, required); ClickHouse and the settings below are its
// own, every one read and checked before anything connects or migrates.
await runService("analytics", {
  settings(log) {
    // Where a consumer that does not exist yet starts: the whole stream, or only events from now on.
    const startAt = env.string("ANALYTICS_START_AT", "all");
    if (startAt !== "all" && startAt !== "new") {
      throw new Error(`ANALYTICS_START_AT must be all or new, got '${startAt}'`);
    }
    // The read-only ClickHouse user that runs tenants' raw SQL (docs/analytics-queries.md); separate from
    // CLICKHOUSE_URL's user, which migrates and ingests.
    const queryUrl = env.string("CLICKHOUSE_QUERY_URL");
    if (!queryUrl) {
      log.warn(
        "CLICKHOUSE_QUERY_URL is not set: raw analytics queries run as CLICKHOUSE_URL's user with readonly=2 and per-query limits; set it to a read-only user limited to the analytics database (docs/analytics-queries.md)",
      );
    }
    return {
      clickhouseUrl: env.required("CLICKHOUSE_URL"),
      // A client only: it connects with the first query.
      queryRunner: queryUrl ? openClickHouseQueryUser(queryUrl) : undefined,
      // ANALYTICS_CONSUMER names the durable consumer (one per deployment; replicas share it and split the work).
      durable: env.string("ANALYTICS_CONSUMER", "analytics")!,
      startAt: startAt as "all" | "new",
      limits: queryLimitsFromEnv(),
    };
  },
  async start(s, ctx) {
    const { log } = ctx;
    const { queryRunner } = s;
    if (queryRunner) ctx.onStop(() => queryRunner.client.close());
    const { client: clickhouse, database } = await ctx.until("ClickHouse", async () => {
      const opened = await openClickHouse(s.clickhouseUrl);
      try {
        const applied = await migrateClickHouse(opened.client);
        log.info({ database: opened.database, applied }, "ClickHouse schema up to date");
        return opened;
      } catch (err) {
        await opened.client.close();
        throw err;
      }
    });
    ctx.onStop(() => clickhouse.close());
    const nats = ctx.nats!;
    const deps = createAnalyticsDeps({ nats: nats.nc, clickhouse, queryRunner, log, limits: s.limits });
    // The consumer reads on a connection of its own: a backlog it catches up on cannot crowd the
    // shared connection's JetStream requests. Stopped first: it inserts and acknowledges what it holds.
    const consumerNats = await ctx.natsConnection("consumer");
    const consumer = await ctx.until("JetStream consumer", () =>
      startConsumer({ nats: consumerNats, store: deps.store, log, durable: s.durable, startAt: s.startAt }),
    );
    watchConsumer(consumer);
    ctx.onStop(() => consumer.stop());
    return { routes: analyticsRoutes(deps), ready: deps.ready, about: { database } };
  },
});
