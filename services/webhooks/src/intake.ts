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
import { webhookDeliveriesAdded } from "./metrics.ts";
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

/**
 * The one-process intake (`npm start` without NATS): DomainEvents handed over in process are queued
 * and written as delivery rows by a loop of their own, the rows being the outbox the worker drains.
 * Publishing only appends to the queue; a failed write is retried, the same events again (intake is
 * idempotent). Bounded: past `maxBuffered` an event is dropped, counted and logged.
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
    private readonly options: { maxBuffered?: number; retryMs?: number } = {},
  ) {}

  take(event: DomainEvent): void {
    if (this.queue.length >= (this.options.maxBuffered ?? 100_000)) {
      this.dropped++;
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
      try {
        webhookDeliveriesAdded.inc(await this.store.intake(batch, this.clock.now()));
        this.queue.splice(0, batch.length);
        this.taken += batch.length;
      } catch (err) {
        this.log.warn(
          { err: (err as Error).message, events: batch.length },
          "webhook intake failed; retrying",
        );
        if (this.closed) break;
        await sleep(this.options.retryMs ?? 1_000);
      }
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
}

export interface RunningIntake {
  stats(): { taken: number; messages: number; undecodable: number; failedWrites: number };
  stop(): Promise<void>;
}

/**
 * The intake where NATS is configured: a durable pull consumer of events.domain on the events
 * stream. Each message's events are written in one transaction and the message is acknowledged
 * only after the commit; while the database is down the write is retried and the message kept
 * from redelivery (working()). A redelivered message adds nothing (intake is idempotent on webhook
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
  const stats = { taken: 0, messages: 0, undecodable: 0, failedWrites: 0 };
  let stopping = false;

  const loop = (async () => {
    for await (const msg of messages) {
      let events: DomainEvent[];
      try {
        events = decodeDomainEvents(msg.data, msg.headers?.get(EVENT_BATCH_HEADER) === "1");
      } catch (err) {
        stats.undecodable++;
        log.error({ err: (err as Error).message, seq: msg.seq }, "undecodable domain event dropped");
        msg.term();
        continue;
      }
      let backoff = 100;
      for (;;) {
        try {
          const added = await store.intake(events.map(eventRecordOf), clock.now());
          stats.taken += added;
          webhookDeliveriesAdded.inc(added);
          msg.ack();
          stats.messages++;
          break;
        } catch (err) {
          stats.failedWrites++;
          log.warn({ err: (err as Error).message, retryInMs: backoff }, "webhook intake failed; retrying");
          if (stopping) break;
          msg.working();
          await sleep(backoff);
          backoff = Math.min(backoff * 2, maxBackoffMs);
        }
      }
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
