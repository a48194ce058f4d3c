import type { ClickHouseClient } from "@clickhouse/client";
import { createLogger, type Logger } from "@latchkey/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import { decodeEvent } from "./events.ts";
import type { AnalyticsStore } from "./store/analytics-store.ts";
import { ClickHouseAnalyticsStore } from "./store/clickhouse-analytics-store.ts";
import { MemoryAnalyticsStore } from "./store/memory-analytics-store.ts";

export interface AnalyticsDeps {
  /** Where verifications are counted: ClickHouse, or memory in the embedded default and unit tests. */
  store: AnalyticsStore;
  /** Readiness: the store answers and, where events come through NATS, NATS is connected. */
  ready(): Promise<boolean>;
  /** Structured logs; a failed store call is logged here once, with its workspace. */
  log: Logger;
}

/** Production dependencies: ClickHouse for the counts, NATS for readiness (the consumer is startConsumer). */
export function createAnalyticsDeps(options: {
  nats: NatsConnection;
  clickhouse: ClickHouseClient;
  log?: Logger;
}): AnalyticsDeps {
  const store = new ClickHouseAnalyticsStore(options.clickhouse);
  const connected = watchConnection(options.nats);
  return {
    store,
    log: options.log ?? createLogger("analytics"),
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

export type Ingest = (subject: string, id: string, data: Uint8Array) => void;

/**
 * The embedded default: one process, no ClickHouse and no NATS. Events come
 * from a DirectEventSink straight to `ingest` and are kept in memory (bounded
 * by `maxRows`; lost on restart). `store` may be any AnalyticsStore instead.
 */
export function createEmbeddedAnalyticsDeps(
  options: { log?: Logger; store?: AnalyticsStore; maxRows?: number } = {},
): AnalyticsDeps & { ingest: Ingest } {
  const log = options.log ?? createLogger("analytics");
  const store = options.store ?? new MemoryAnalyticsStore(options.maxRows ?? 500_000);
  return { store, log, ready: () => store.ping(), ingest: ingestInto(store, log) };
}

/** Decodes an event and stores it off the caller's path; never throws to the publisher. */
export function ingestInto(store: AnalyticsStore, log: Logger): Ingest {
  return (subject, id, data) => {
    let stored: Promise<number> | undefined;
    try {
      const event = decodeEvent(subject, id, data);
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
