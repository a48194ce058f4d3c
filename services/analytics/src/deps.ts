import type { Message } from "@bufbuild/protobuf";
import type { ClickHouseClient } from "@clickhouse/client";
import {
  createLogger,
  DirectEventSink,
  type EventSink,
  env,
  type Logger,
  migrate,
  type Sql,
  watchEventSink,
} from "@latchkey/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import { BufferedIngest, type BufferedIngestOptions } from "./buffered-ingest.ts";
import type { QueryRunner } from "./clickhouse.ts";
import { eventOf } from "./events.ts";
import { analyticsPostgresMigrations } from "./migrations.ts";
import type { AnalyticsStore, QueryLimits } from "./store/analytics-store.ts";
import { ClickHouseAnalyticsStore } from "./store/clickhouse-analytics-store.ts";
import { MemoryAnalyticsStore } from "./store/memory-analytics-store.ts";
import { PostgresAnalyticsStore } from "./store/postgres-analytics-store.ts";

export interface AnalyticsDeps {
  /** Where verifications are counted: ClickHouse; PostgreSQL in the embedded default; memory in unit tests. */
  store: AnalyticsStore;
  /** Readiness: the store answers and, where events come through NATS, NATS is connected. */
  ready(): Promise<boolean>;
  /** Structured logs; a failed store call is logged here once, with its workspace. */
  log: Logger;
  /** Bounds of every query; DEFAULT_QUERY_LIMITS when absent. */
  limits?: QueryLimits;
}

/** The query limits from env (ANALYTICS_QUERY_*), each defaulting to DEFAULT_QUERY_LIMITS. */
export function queryLimitsFromEnv(): QueryLimits {
  // Literal defaults (equal to DEFAULT_QUERY_LIMITS), so deploy/README.md's table can be checked against them.
  return {
    timeoutMs: env.int("ANALYTICS_QUERY_TIMEOUT_MS", 10_000, 1),
    maxRows: env.int("ANALYTICS_QUERY_MAX_ROWS", 10_000, 1),
    maxBytes: env.int("ANALYTICS_QUERY_MAX_BYTES", 8_388_608, 1),
    structuredMaxRows: env.int("ANALYTICS_STRUCTURED_MAX_ROWS", 100_000, 1),
    concurrency: env.int("ANALYTICS_QUERY_CONCURRENCY", 4, 1),
    totalConcurrency: env.int("ANALYTICS_QUERY_TOTAL_CONCURRENCY", 16, 2),
  };
}

/** Production dependencies: ClickHouse for the counts, NATS for readiness (the consumer is startConsumer). */
export function createAnalyticsDeps(options: {
  nats: NatsConnection;
  clickhouse: ClickHouseClient;
  /** Where raw queries run: the read-only query user; without it, `clickhouse` with readonly=2. */
  queryRunner?: QueryRunner;
  log?: Logger;
  limits?: QueryLimits;
}): AnalyticsDeps {
  const log = options.log ?? createLogger("analytics");
  const store = new ClickHouseAnalyticsStore(options.clickhouse, options.queryRunner, log);
  const connected = watchConnection(options.nats);
  return {
    store,
    limits: options.limits ?? queryLimitsFromEnv(),
    log,
    ready: async () => connected() && (await store.ping().catch(() => false)),
  };
}

/** In-memory dependencies for unit tests; the store is exposed for seeding. */
export function createMemoryAnalyticsDeps(
  options: { log?: Logger } = {},
): AnalyticsDeps & { store: MemoryAnalyticsStore } {
  const store = new MemoryAnalyticsStore();
  return { store, log: options.log ?? createLogger("analytics"), ready: async () => true };
}

export type Ingest = (subject: string, id: string, message: Message) => void;

export interface EmbeddedAnalyticsDeps extends AnalyticsDeps {
  /** Where the services publish their events (no NATS): the buffered writer into PostgreSQL, or memory. */
  events: EventSink;
  /** The same entry point as a function: `events.publish`. */
  ingest: Ingest;
  /** Writes what is still buffered; call it before the database closes. */
  close(): Promise<void>;
}

/**
 * The embedded default: one process, no ClickHouse and no NATS; events come
 * from the services straight to `events`. With `sql` (the process's own
 * database: PGlite, or DATABASE_URL) they are kept in PostgreSQL, so they
 * survive a restart: the analytics migration is applied, and events are
 * buffered and written in batches (BufferedIngest; `close()` writes the rest).
 * Without it they are kept in memory (bounded by `maxRows`, lost on restart),
 * each stored as it arrives: unit tests use that, and `store` may replace the
 * memory store there.
 */
export async function createEmbeddedAnalyticsDeps(
  options: {
    log?: Logger;
    sql?: Sql;
    store?: AnalyticsStore;
    maxRows?: number;
    batching?: BufferedIngestOptions;
    limits?: QueryLimits;
  } = {},
): Promise<EmbeddedAnalyticsDeps> {
  const log = options.log ?? createLogger("analytics");
  const limits = options.limits ?? queryLimitsFromEnv();
  if (options.sql) {
    await migrate(options.sql, "analytics", analyticsPostgresMigrations);
    const store = new PostgresAnalyticsStore(options.sql);
    const buffer = new BufferedIngest(store, log, options.batching);
    watchEventSink(buffer);
    return {
      store,
      log,
      limits,
      ready: () => store.ping(),
      events: buffer,
      ingest: (subject, id, message) => buffer.ingest(subject, id, message),
      close: () => buffer.close(),
    };
  }
  const store = options.store ?? new MemoryAnalyticsStore(options.maxRows ?? 500_000);
  const ingest = ingestInto(store, log);
  return {
    store,
    log,
    limits,
    ready: () => store.ping(),
    events: new DirectEventSink(ingest),
    ingest,
    close: async () => {},
  };
}

/** Stores an event's message off the caller's path, one insert per event; never throws to the publisher. */
export function ingestInto(store: AnalyticsStore, log: Logger): Ingest {
  return (subject, id, message) => {
    let stored: Promise<number> | undefined;
    try {
      const event = eventOf(subject, id, message);
      if (event.kind === "verification") stored = store.insertVerifications([event.row]);
      else if (event.kind === "ratelimit") stored = store.insertRatelimits([event.row]);
    } catch (err) {
      log.error({ err: (err as Error).message, subject, id }, "undecodable event dropped");
      return;
    }
    stored?.catch((err: unknown) => log.error({ err, subject, id }, "event not stored"));
  };
}

/** Tracks whether the connection is up (not only not closed): readiness fails while it reconnects. */
function watchConnection(nc: NatsConnection): () => boolean {
  let up = true;
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") up = false;
      else if (s.type === "reconnect") up = true;
    }
  })().catch(() => {});
  return () => up && !nc.isClosed();
}
