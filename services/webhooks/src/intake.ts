import { fromBinary, type Message } from "@bufbuild/protobuf";
import { type DomainEvent, DomainEventSchema, EventBatchSchema } from "@latchkey/proto/common/v1/common_pb";
import {
  type Clock,
  DOMAIN_EVENT_SUBJECT,
  EVENT_BATCH_HEADER,
  EVENTS_STREAM,
  type EventSink,
  type EventSinkStats,
  type EventType,
  ensureEventsStream,
  type Logger,
} from "@latchkey/runtime";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { webhookDeliveriesAdded, webhookEventsDropped } from "./metrics.ts";
import type { EventRecord, WebhookStore } from "./store/webhook-store.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A DomainEvent as a delivery keeps it. Its data goes into every body as it is, so data that is not
 * a JSON object (which no publisher should send) becomes {} rather than a body receivers cannot parse.
 */
export const eventRecordOf = (e: DomainEvent): EventRecord => ({
  id: e.id,
  type: e.type,
  workspaceId: e.workspaceId,
  occurredAt: Number(e.occurredAt),
  dataJson: isJsonObject(e.dataJson) ? e.dataJson : "{}",
});

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value);
  } catch {
    return false;
  }
}

/** The DomainEvents of one JetStream message: an EventBatch when the publisher marked it so, else one event. */
export function decodeDomainEvents(data: Uint8Array, batch: boolean): DomainEvent[] {
  if (!batch) return [fromBinary(DomainEventSchema, data)];
  return fromBinary(EventBatchSchema, data).events.map((e) => fromBinary(DomainEventSchema, e.data));
}

/** Node's and postgres.js's codes of a connection that failed or broke: the write may pass later. */
const TRANSIENT_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
]);

/**
 * Whether a failed write may pass if tried again. `permanent`: SQLSTATE class 22 (data exception)
 * or 23 (integrity constraint), the same events fail every time. `transient`: a connection error,
 * SQLSTATE class 08 (connection), 40 (serialization, deadlock), 53 (resources), 57 (shutdown,
 * cancelled, timed out), 58 (system) or 55P03 (lock not available). Anything else is `unknown`,
 * tried a bounded number of times.
 */
export function writeErrorKind(err: unknown): "transient" | "permanent" | "unknown" {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return "unknown";
  if (TRANSIENT_CODES.has(code)) return "transient";
  if (/^[0-9A-Z]{5}$/.test(code)) {
    const cls = code.slice(0, 2);
    if (cls === "22" || cls === "23") return "permanent";
    if (["08", "40", "53", "57", "58"].includes(cls) || code === "55P03") return "transient";
  }
  return "unknown";
}

/** Tries of a write failing with an `unknown` error before its event is dropped (docs/limits.md). */
export const MAX_WRITE_TRIES = 10;

export interface WriteEach {
  /** Writes the events in one transaction. */
  write(events: EventRecord[]): Promise<void>;
  maxTries: number;
  /** After a failure to retry: waits; false to give up for now (shutting down). */
  wait(tries: number, err: unknown): Promise<boolean>;
  /** An event no write will take: dropped, counted, logged. */
  drop(event: EventRecord, err: unknown): void;
}

/**
 * Writes the events, retrying what may pass later; when a write cannot pass (a permanent error, or
 * an unknown one `maxTries` times) the events are written one at a time, so that only the event
 * that cannot be written is dropped and the others, every workspace's, go on. Answers how many
 * events were neither written nor dropped (the last ones; only when wait gave up).
 */
export async function writeEach(events: readonly EventRecord[], o: WriteEach): Promise<number> {
  let pending = events.slice();
  let oneByOne = false;
  let tries = 0;
  while (pending.length > 0) {
    const part = oneByOne ? pending.slice(0, 1) : pending;
    try {
      await o.write(part);
      pending = pending.slice(part.length);
      tries = 0;
    } catch (err) {
      tries++;
      const kind = writeErrorKind(err);
      if (kind === "permanent" || (kind === "unknown" && tries >= o.maxTries)) {
        tries = 0;
        if (part.length > 1) {
          oneByOne = true;
          continue;
        }
        o.drop(part[0]!, err);
        pending = pending.slice(1);
        continue;
      }
      if (!(await o.wait(tries, err))) return pending.length;
    }
  }
  return 0;
}

/**
 * The one-process intake (`npm start` without NATS): DomainEvents handed over in process are queued
 * and written as delivery rows by a loop of their own, the rows being the outbox the worker drains.
 * Publishing only appends to the queue; a failed write is retried, the same events again (intake is
 * idempotent), except an event no write will take (writeEach), which is dropped, counted and
 * logged. Bounded: past `maxBuffered` an event is dropped, counted and logged.
 */
export class InProcessIntake {
  private queue: EventRecord[] = [];
  private writing: Promise<void> | undefined;
  private dropped = 0;
  private taken = 0;
  private closed = false;

  constructor(
    private readonly store: WebhookStore,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly options: {
      maxBuffered?: number;
      retryMs?: number;
      maxTries?: number;
      /** The retry schedule's first wait: a new delivery is due this long after it is written. */
      firstDelayMs?: number;
    } = {},
  ) {}

  take(event: DomainEvent): void {
    if (this.queue.length >= (this.options.maxBuffered ?? 100_000)) {
      this.dropped++;
      webhookEventsDropped.inc({ reason: "buffer_full" });
      this.log.error(
        { dropped: this.dropped, eventId: event.id },
        "webhook intake buffer full: event dropped",
      );
      return;
    }
    this.queue.push(eventRecordOf(event));
    this.writing ??= this.drain();
  }

  stats() {
    return { buffered: this.queue.length, taken: this.taken, dropped: this.dropped };
  }

  /** Resolves once every event handed over so far is written (or close gave up). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /**
   * Writes what is queued and stops retrying: while the database is down, what could not be
   * written is dropped and logged rather than holding the shutdown.
   */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
    if (this.queue.length > 0) {
      this.log.error({ events: this.queue.length }, "webhook intake closed with events not written: dropped");
      this.dropped += this.queue.length;
      this.queue = [];
    }
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.slice(0, 500);
      const left = await writeEach(batch, {
        write: async (events) => {
          webhookDeliveriesAdded.inc(
            await this.store.intake(events, this.clock.now(), this.options.firstDelayMs),
          );
          this.taken += events.length;
        },
        maxTries: this.options.maxTries ?? MAX_WRITE_TRIES,
        wait: async (_tries, err) => {
          this.log.warn(
            { err: (err as Error).message, events: batch.length },
            "webhook intake failed; retrying",
          );
          if (this.closed) return false;
          await sleep(this.options.retryMs ?? 1_000);
          return true;
        },
        drop: (event, err) => {
          this.dropped++;
          webhookEventsDropped.inc({ reason: "unwritable" });
          this.log.error(
            { err: (err as Error).message, eventId: event.id, workspaceId: event.workspaceId },
            "webhook intake: event cannot be written, dropped",
          );
        },
      });
      this.queue.splice(0, batch.length - left);
      if (left > 0) break;
    }
    this.writing = undefined;
  }
}

/**
 * An EventSink that hands DomainEvents to `take` (the in-process intake) and everything else to
 * `rest` (the embedded analytics), as they are: the one-process composition's event sink.
 */
export function withDomainEvents(rest: EventSink, take: (event: DomainEvent) => void): EventSink {
  return {
    publish<M extends Message>(type: EventType<M>, id: string, message: M): void {
      if (type.subject === DOMAIN_EVENT_SUBJECT) take(message as unknown as DomainEvent);
      else rest.publish(type, id, message);
    },
    flush: (timeoutMs?: number) => rest.flush(timeoutMs),
    stats: (): EventSinkStats => rest.stats(),
  };
}

export interface IntakeConsumerOptions {
  nats: NatsConnection;
  store: WebhookStore;
  clock: Clock;
  log: Logger;
  /** The durable consumer's name; replicas sharing it share the work. */
  durable?: string;
  maxBackoffMs?: number;
  /** Tries of a write failing with an unknown error before its event is dropped; MAX_WRITE_TRIES. */
  maxTries?: number;
  /** The retry schedule's first wait: a new delivery is due this long after it is written. */
  firstDelayMs?: number;
}

export interface RunningIntake {
  stats(): {
    taken: number;
    messages: number;
    undecodable: number;
    failedWrites: number;
    unwritable: number;
  };
  stop(): Promise<void>;
}

/**
 * The intake where NATS is configured: a durable pull consumer of events.domain on the events
 * stream. Each message's events are written in one transaction and the message is acknowledged
 * only after the commit; while the database is down the write is retried and the message kept
 * from redelivery (working()). An event no write will take (writeEach) is dropped, counted and
 * logged, and a message none of whose events could be written is terminated, so it holds up no
 * other workspace's events. A redelivered message adds nothing (intake is idempotent on webhook
 * and event id), so nothing is lost and nothing is delivered twice.
 */
export async function startIntakeConsumer(options: IntakeConsumerOptions): Promise<RunningIntake> {
  const { nats, store, log, clock } = options;
  const durable = options.durable ?? "webhooks";
  const maxBackoffMs = options.maxBackoffMs ?? 10_000;
  await ensureEventsStream(nats);
  const jsm = await jetstreamManager(nats);
  try {
    await jsm.consumers.info(EVENTS_STREAM, durable);
  } catch {
    await jsm.consumers.add(EVENTS_STREAM, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      // Webhooks registered now want what happens from now on, not the stream's week of history.
      deliver_policy: DeliverPolicy.New,
      filter_subject: DOMAIN_EVENT_SUBJECT,
      ack_wait: 60_000_000_000,
      max_ack_pending: 1_000,
    });
  }
  const consumer = await jetstream(nats).consumers.get(EVENTS_STREAM, durable);
  const messages = await consumer.consume({ max_messages: 100 });
  const stats = { taken: 0, messages: 0, undecodable: 0, failedWrites: 0, unwritable: 0 };
  let stopping = false;

  const loop = (async () => {
    for await (const msg of messages) {
      let events: DomainEvent[];
      try {
        events = decodeDomainEvents(msg.data, msg.headers?.get(EVENT_BATCH_HEADER) === "1");
      } catch (err) {
        stats.undecodable++;
        webhookEventsDropped.inc({ reason: "undecodable" });
        log.error({ err: (err as Error).message, seq: msg.seq }, "undecodable domain event dropped");
        msg.term();
        continue;
      }
      let backoff = 100;
      let dropped = 0;
      const left = await writeEach(events.map(eventRecordOf), {
        write: async (records) => {
          const added = await store.intake(records, clock.now(), options.firstDelayMs);
          stats.taken += added;
          webhookDeliveriesAdded.inc(added);
        },
        maxTries: options.maxTries ?? MAX_WRITE_TRIES,
        wait: async (_tries, err) => {
          stats.failedWrites++;
          log.warn({ err: (err as Error).message, retryInMs: backoff }, "webhook intake failed; retrying");
          if (stopping) return false;
          msg.working();
          await sleep(backoff);
          backoff = Math.min(backoff * 2, maxBackoffMs);
          return true;
        },
        drop: (event, err) => {
          dropped++;
          stats.unwritable++;
          webhookEventsDropped.inc({ reason: "unwritable" });
          log.error(
            { err: (err as Error).message, eventId: event.id, workspaceId: event.workspaceId, seq: msg.seq },
            "webhook intake: event cannot be written, dropped",
          );
        },
      });
      if (left > 0) break;
      if (dropped === events.length && dropped > 0) msg.term();
      else msg.ack();
      stats.messages++;
      if (stopping) break;
    }
  })().catch((err: unknown) => log.error({ err }, "webhook intake stopped on an error"));

  return {
    stats: () => ({ ...stats }),
    async stop() {
      stopping = true;
      await messages.close();
      await loop;
    },
  };
}
