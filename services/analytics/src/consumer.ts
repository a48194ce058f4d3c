import {
  CONSUMER_PULL_BYTES,
  EVENT_BATCH_HEADER,
  EVENTS_STREAM,
  ensureEventsStream,
  type Logger,
  type LoopProgress,
  loopProgress,
} from "@latchkey/runtime";
import { AckPolicy, DeliverPolicy, type JsMsg, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { Gauge } from "prom-client";
import { type AnalyticsEvent, decodeMessage } from "./events.ts";
import type { AnalyticsStore, RatelimitCheck, Verification } from "./store/analytics-store.ts";

export interface ConsumerOptions {
  nats: NatsConnection;
  store: AnalyticsStore;
  log: Logger;
  /** The durable consumer's name; replicas sharing it share the work. */
  durable?: string;
  /** Insert when this many events are waiting... */
  batchSize?: number;
  /** ...or this often, whichever comes first. */
  intervalMs?: number;
  /** Longest pause between insert retries while the store is down. */
  maxBackoffMs?: number;
  /** Where a new durable consumer starts: the whole stream (default) or only what arrives from now on. */
  startAt?: "all" | "new";
  /** Marked at each batch stored and each interval that finds nothing waiting; loopProgress("analytics.consumer") by default. */
  progress?: LoopProgress;
}

export interface ConsumerStats {
  /** Events stored (first deliveries and anything not stored before). */
  inserted: number;
  /** Events acknowledged, duplicates included. */
  acked: number;
  /** Redelivered or repeated events found already stored, so not counted again. */
  duplicates: number;
  /** Insert attempts that failed and were retried. */
  failedInserts: number;
  /** Events that could not be decoded (terminated, never retried). */
  undecodable: number;
  /** Now minus the oldest event's time in the last inserted batch: the longest any of its events waited. */
  lagMs: number;
}

export interface RunningConsumer {
  stats(): ConsumerStats;
  /** Stops fetching, inserts and acknowledges what it holds (if the store answers within `timeoutMs`). */
  stop(timeoutMs?: number): Promise<void>;
}

interface Held {
  msg: JsMsg;
  event: AnalyticsEvent;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Moves events from the LATCHKEY_EVENTS stream into the store: a durable pull
 * consumer, inserts in batches (on size or on a timer), and an
 * acknowledgement only after the insert succeeded. While the store is down the
 * batch is retried with backoff and kept from redelivery (working()); nothing
 * is acknowledged, so a crash meanwhile loses nothing either. Redeliveries are
 * harmless: the store skips request ids it already holds.
 */
export async function startConsumer(options: ConsumerOptions): Promise<RunningConsumer> {
  const { nats, store, log } = options;
  const durable = options.durable ?? "analytics";
  const batchSize = options.batchSize ?? 5_000;
  const intervalMs = options.intervalMs ?? 1_000;
  const maxBackoffMs = options.maxBackoffMs ?? 10_000;
  const progress = options.progress ?? loopProgress("analytics.consumer");

  await ensureEventsStream(nats);
  const jsm = await jetstreamManager(nats);
  const config = {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: options.startAt === "new" ? DeliverPolicy.New : DeliverPolicy.All,
    ack_wait: 60_000_000_000, // ns: kept fresh with working() while an insert is retried
    max_ack_pending: Math.max(20_000, batchSize * 4),
  };
  try {
    await jsm.consumers.info(EVENTS_STREAM, durable);
    await jsm.consumers.update(EVENTS_STREAM, durable, {
      ack_wait: config.ack_wait,
      max_ack_pending: config.max_ack_pending,
    });
  } catch {
    await jsm.consumers.add(EVENTS_STREAM, config);
  }
  const consumer = await jetstream(nats).consumers.get(EVENTS_STREAM, durable);
  // Bounded in bytes, not messages: a backlog of large batches is handed over a few MiB at a time
  // (CONSUMER_PULL_BYTES), never enough to make nats-server drop the connection as a slow consumer.
  const messages = await consumer.consume({ max_bytes: CONSUMER_PULL_BYTES });

  const stats: ConsumerStats = {
    inserted: 0,
    acked: 0,
    duplicates: 0,
    failedInserts: 0,
    undecodable: 0,
    lagMs: 0,
  };
  let pending: Held[] = [];
  let flushing: Promise<void> = Promise.resolve();
  let inFlight = false;
  let stopping = false;
  let giveUpAt = Number.POSITIVE_INFINITY;

  /** Inserts one batch, retrying until it succeeds or stop() gives up; acknowledges only after success. */
  async function insert(batch: Held[]): Promise<void> {
    const verifications: Verification[] = [];
    const checks: RatelimitCheck[] = [];
    let oldest = Number.POSITIVE_INFINITY;
    for (const { event } of batch) {
      if (event.kind === "verification") verifications.push(event.row);
      else if (event.kind === "ratelimit") checks.push(event.row);
      if (event.kind !== "ignored") oldest = Math.min(oldest, event.row.time);
    }
    let backoff = 100;
    for (;;) {
      try {
        const added =
          (verifications.length ? await store.insertVerifications(verifications) : 0) +
          (checks.length ? await store.insertRatelimits(checks) : 0);
        stats.inserted += added;
        stats.duplicates += verifications.length + checks.length - added;
        if (oldest !== Number.POSITIVE_INFINITY) stats.lagMs = Math.max(0, Date.now() - oldest);
        // A message carries many events, all in this batch: it is acknowledged once.
        for (const msg of new Set(batch.map((h) => h.msg))) msg.ack();
        stats.acked += batch.length;
        progress.mark();
        return;
      } catch (err) {
        stats.failedInserts++;
        log.warn(
          { err: (err as Error).message, events: batch.length, retryInMs: backoff },
          "analytics insert failed; retrying",
        );
        if (Date.now() >= giveUpAt) {
          log.warn(
            { events: batch.length },
            "stopping with events not inserted: they stay unacknowledged and will be redelivered",
          );
          return;
        }
        // Keep the stream from redelivering what this process still holds.
        for (const msg of new Set([...batch, ...pending].map((h) => h.msg))) msg.working();
        await sleep(Math.min(backoff, Math.max(0, giveUpAt - Date.now())));
        backoff = Math.min(backoff * 2, maxBackoffMs);
      }
    }
  }

  function flush(): Promise<void> {
    flushing = flushing.then(async () => {
      if (pending.length === 0) return;
      const batch = pending;
      pending = [];
      inFlight = true;
      try {
        await insert(batch);
      } finally {
        inFlight = false;
      }
    });
    return flushing;
  }

  const timer = setInterval(() => {
    if (inFlight) return;
    if (pending.length > 0) void flush();
    else progress.mark();
  }, intervalMs);

  const loop = (async () => {
    for await (const msg of messages) {
      const id = msg.headers?.get("Nats-Msg-Id") || `${msg.info.stream}:${msg.seq}`;
      let events: AnalyticsEvent[];
      try {
        events = decodeMessage(msg.subject, id, msg.data, msg.headers?.get(EVENT_BATCH_HEADER) === "1");
      } catch (err) {
        stats.undecodable++;
        log.error({ err: (err as Error).message, subject: msg.subject, id }, "undecodable event dropped");
        msg.term();
        continue;
      }
      // All events of one message join the same insert batch (nothing awaits in between), so the
      // message is acknowledged only once every one of its events is stored.
      for (const event of events) pending.push({ msg, event });
      // Waiting here is the backpressure: no more is pulled while a full batch is being inserted.
      if (pending.length >= batchSize) await flush();
      if (stopping) break;
    }
  })().catch((err: unknown) => log.error({ err }, "analytics consumer stopped on an error"));

  log.info({ durable, batchSize, intervalMs }, "analytics consumer running");
  return {
    stats: () => ({ ...stats }),
    async stop(timeoutMs = 10_000) {
      stopping = true;
      giveUpAt = Date.now() + timeoutMs;
      clearInterval(timer);
      await messages.close();
      await loop;
      await flush();
    },
  };
}

/** Reports the consumer's lag and counts at /metrics. */
export function watchConsumer(consumer: RunningConsumer): void {
  const gauge = (name: string, help: string, pick: (s: ConsumerStats) => number) =>
    new Gauge({
      name,
      help,
      collect() {
        this.set(pick(consumer.stats()));
      },
    });
  gauge(
    "latchkey_analytics_consumer_lag_ms",
    "Age of the oldest event in the last inserted batch",
    (s) => s.lagMs,
  );
  gauge("latchkey_analytics_events_inserted_total", "Events inserted into ClickHouse", (s) => s.inserted);
  gauge(
    "latchkey_analytics_events_duplicate_total",
    "Redelivered events skipped as duplicates",
    (s) => s.duplicates,
  );
  gauge(
    "latchkey_analytics_insert_failures_total",
    "Failed ClickHouse inserts (retried)",
    (s) => s.failedInserts,
  );
}
