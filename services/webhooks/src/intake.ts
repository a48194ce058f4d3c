import { fromBinary, type Message } from "@bufbuild/protobuf";
import { type DomainEvent, DomainEventSchema, EventBatchSchema } from "@latchkey/proto/common/v1/common_pb";
import {
  type Clock,
  CONSUMER_PULL_BYTES,
  DOMAIN_EVENT_SUBJECT,
  EVENT_BATCH_HEADER,
  EVENTS_STREAM,
  type EventSink,
  type EventSinkStats,
  type EventType,
  ensureEventsStream,
  isTransientError,
  type Logger,
  loopProgress,
} from "@latchkey/runtime";
import { AckPolicy, DeliverPolicy, type JsMsg, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { webhookDeliveriesAdded, webhookDeliveriesRefused, webhookEventsDropped } from "./metrics.ts";
import type { EventRecord, WebhookStore } from "./store/webhook-store.ts";
import { Wakeup } from "./wakeup.ts";

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
 * Whether a failed write may pass if tried again. `permanent`: SQLSTATE class 22 (data exception)
 * or 23 (integrity constraint), the same events fail every time. `transient`: a connection error,
 * SQLSTATE class 08 (connection), 40 (serialization, deadlock), 53 (resources), 57 (shutdown,
 * cancelled, timed out), 58 (system) or 55P03 (lock not available). Anything else is `unknown`,
 * tried a bounded number of times.
 */
export function writeErrorKind(err: unknown): "transient" | "permanent" | "unknown" {
  const code = (err as { code?: unknown } | null)?.code;
  if (isTransientError(err)) return "transient";
  if (typeof code === "string" && /^(22|23)[0-9A-Z]{3}$/.test(code)) return "permanent";
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

/** Events written per transaction by the in-process intake, taken from the workspaces by turns. */
const INTAKE_BATCH = 200;
/** Events one workspace may have waiting in the in-process intake (docs/limits.md). */
export const MAX_BUFFERED_PER_WORKSPACE = 10_000;
/** How often an intake with nothing to do says it looked (its progress mark). */
const IDLE_MARK_MS = 1_000;

/** How an intake writes a batch and what it does with what it cannot. */
export interface IntakeWriter {
  store: WebhookStore;
  clock: Clock;
  log: Logger;
  firstDelayMs?: number;
  maxTries?: number;
  /** After a failure to retry: waits; false to give up for now (shutting down). */
  wait(tries: number, err: unknown): Promise<boolean>;
  /** An event no write will take (writeEach). */
  unwritable(event: EventRecord, err: unknown): void;
  /** A write passed: `events` written, as `deliveries` deliveries. */
  written(events: number, deliveries: number): void;
}

/**
 * The log of refused deliveries: a workspace's first refusal at once, then at most one line per
 * workspace every 10 s with the count since, so a flood at its bound does not flood the log.
 */
const refusals = {
  last: new Map<string, { at: number; since: number }>(),
  note(workspaceId: string, refused: number, log: Logger): void {
    const now = Date.now();
    const seen = this.last.get(workspaceId);
    if (seen && now - seen.at < 10_000) {
      seen.since += refused;
      return;
    }
    if (this.last.size >= 1_000) this.last.clear();
    this.last.set(workspaceId, { at: now, since: 0 });
    log.warn(
      { workspaceId, refused: refused + (seen?.since ?? 0) },
      "webhook deliveries not queued: the workspace has the most pending deliveries it may have",
    );
  },
};

/**
 * Writes a batch's events one workspace at a time, the workspace with the fewest events first: a
 * workspace that floods the intake fills the end of the batch, so another's few events are committed
 * before its many, not after. Each workspace's events keep their order and are written with
 * writeEach (retried, the unwritable one dropped); deliveries its bound of pending ones refuses are
 * counted and logged. Answers how many events were neither written nor dropped (writeEach gave up).
 */
export async function writeFairly(events: readonly EventRecord[], w: IntakeWriter): Promise<number> {
  const groups = new Map<string, EventRecord[]>();
  for (const e of events) {
    const group = groups.get(e.workspaceId);
    if (group) group.push(e);
    else groups.set(e.workspaceId, [e]);
  }
  const ordered = [...groups.values()].sort((a, b) => a.length - b.length);
  for (let i = 0; i < ordered.length; i++) {
    const left = await writeEach(ordered[i]!, {
      write: async (part) => {
        const added = await w.store.intake(part, w.clock.now(), {
          firstDelayMs: w.firstDelayMs,
          refused: (workspaceId, refused) => {
            webhookDeliveriesRefused.inc(refused);
            refusals.note(workspaceId, refused, w.log);
          },
        });
        w.written(part.length, added);
        webhookDeliveriesAdded.inc(added);
      },
      maxTries: w.maxTries ?? MAX_WRITE_TRIES,
      wait: w.wait,
      drop: w.unwritable,
    });
    if (left > 0) return left + ordered.slice(i + 1).reduce((n, g) => n + g.length, 0);
  }
  return 0;
}

/**
 * The one-process intake (`npm start` without NATS): DomainEvents handed over in process are queued
 * and written as delivery rows by a loop of their own, the rows being the outbox the worker drains.
 * Publishing only appends to the queue. Each workspace has a queue of its own, bounded
 * (`maxBufferedPerWorkspace`, and `maxBuffered` in all), and each batch takes the workspaces'
 * events by turns, so one workspace's flood fills its own queue and the end of each batch while
 * another's events go into the next batch. A failed write is retried, the same events again (intake
 * is idempotent), except an event no write will take (writeEach), which is dropped, counted and
 * logged; past a bound an event is dropped, counted and logged. The loop marks its progress
 * (`webhooks.intake`) per batch, and every second while nothing waits.
 */
export class InProcessIntake {
  private queues = new Map<string, { events: EventRecord[]; head: number }>();
  private buffered = 0;
  private writing: Promise<void> | undefined;
  private dropped = 0;
  private lastDropLog = 0;
  private taken = 0;
  private closed = false;
  private readonly progress = loopProgress("webhooks.intake");
  private readonly idle: NodeJS.Timeout;

  constructor(
    private readonly store: WebhookStore,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly options: {
      maxBuffered?: number;
      maxBufferedPerWorkspace?: number;
      retryMs?: number;
      maxTries?: number;
      /** The retry schedule's first wait: a new delivery is due this long after it is written. */
      firstDelayMs?: number;
      /** Events per transaction. */
      batchSize?: number;
    } = {},
  ) {
    this.idle = setInterval(() => {
      if (this.writing === undefined && this.buffered === 0) this.progress.mark();
    }, IDLE_MARK_MS);
    this.idle.unref();
  }

  take(event: DomainEvent): void {
    const queue = this.queues.get(event.workspaceId);
    const waiting = queue ? queue.events.length - queue.head : 0;
    if (this.buffered >= (this.options.maxBuffered ?? 100_000)) {
      this.drop(event, "buffer_full");
      return;
    }
    if (waiting >= (this.options.maxBufferedPerWorkspace ?? MAX_BUFFERED_PER_WORKSPACE)) {
      this.drop(event, "workspace_buffer_full");
      return;
    }
    if (queue) queue.events.push(eventRecordOf(event));
    else this.queues.set(event.workspaceId, { events: [eventRecordOf(event)], head: 0 });
    this.buffered++;
    this.writing ??= this.drain();
  }

  stats() {
    return { buffered: this.buffered, taken: this.taken, dropped: this.dropped };
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
    clearInterval(this.idle);
    await this.flush();
    if (this.buffered > 0) {
      this.log.error({ events: this.buffered }, "webhook intake closed with events not written: dropped");
      this.dropped += this.buffered;
      this.buffered = 0;
      this.queues.clear();
    }
  }

  /** Counted each; logged at most once a second, so a flood past its bound does not flood the log. */
  private drop(event: DomainEvent, reason: "buffer_full" | "workspace_buffer_full"): void {
    this.dropped++;
    webhookEventsDropped.inc({ reason });
    const now = Date.now();
    if (now - this.lastDropLog < 1_000) return;
    this.lastDropLog = now;
    this.log.error(
      { dropped: this.dropped, eventId: event.id, workspaceId: event.workspaceId, reason },
      "webhook intake buffer full: event dropped",
    );
  }

  /**
   * The next batch: one event of each workspace in turn, oldest first within each, until the batch
   * is full. Taken out of the queues once written or given up (`commit`).
   */
  private nextBatch(): { events: EventRecord[]; commit(): void } {
    const limit = this.options.batchSize ?? INTAKE_BATCH;
    const taken = new Map<string, number>();
    const events: EventRecord[] = [];
    let more = true;
    while (events.length < limit && more) {
      more = false;
      for (const [workspaceId, q] of this.queues) {
        const n = taken.get(workspaceId) ?? 0;
        if (q.head + n >= q.events.length) continue;
        events.push(q.events[q.head + n]!);
        taken.set(workspaceId, n + 1);
        more = true;
        if (events.length === limit) break;
      }
    }
    return {
      events,
      commit: () => {
        for (const [workspaceId, n] of taken) {
          const q = this.queues.get(workspaceId)!;
          q.head += n;
          this.buffered -= n;
          if (q.head === q.events.length) this.queues.delete(workspaceId);
          else if (q.head > 1_024) {
            q.events = q.events.slice(q.head);
            q.head = 0;
          }
          // The workspace goes to the back of the turns.
          if (this.queues.has(workspaceId)) {
            this.queues.delete(workspaceId);
            this.queues.set(workspaceId, q);
          }
        }
      },
    };
  }

  private async drain(): Promise<void> {
    while (this.buffered > 0) {
      const batch = this.nextBatch();
      const left = await writeFairly(batch.events, {
        store: this.store,
        clock: this.clock,
        log: this.log,
        firstDelayMs: this.options.firstDelayMs,
        maxTries: this.options.maxTries,
        written: (events) => {
          this.taken += events;
        },
        wait: async (_tries, err) => {
          this.log.warn(
            { err: (err as Error).message, events: batch.events.length },
            "webhook intake failed; retrying",
          );
          if (this.closed) return false;
          await sleep(this.options.retryMs ?? 1_000);
          return true;
        },
        unwritable: (event, err) => {
          this.dropped++;
          webhookEventsDropped.inc({ reason: "unwritable" });
          this.log.error(
            { err: (err as Error).message, eventId: event.id, workspaceId: event.workspaceId },
            "webhook intake: event cannot be written, dropped",
          );
        },
      });
      // Given up (closing while the database is down): the batch's events not written are dropped.
      batch.commit();
      this.dropped += left;
      if (left > 0) {
        this.log.error({ events: left }, "webhook intake closed with events not written: dropped");
        break;
      }
      this.progress.mark();
    }
    // Cleared in the same turn as the check above, so a take() either sees this drain running
    // (and its event is in the queue the loop reads) or starts the next one.
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
  /** Events written per round at most (whole messages; one message may hold more). */
  windowEvents?: number;
  /** Bytes of messages held before they are written, at most (one message past it); ARRIVED_BYTES. */
  maxArrivedBytes?: number;
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

/** Events the JetStream intake writes per round at most, in whole messages. */
const WINDOW_EVENTS = 1_000;
/** Bytes of messages the JetStream intake holds before it writes them, at most (about; one message past it). */
const ARRIVED_BYTES = 8 * 1024 * 1024;

/**
 * The intake where NATS is configured: a durable pull consumer of events.domain on the events
 * stream. One task reads messages as JetStream hands them over (at most `max_ack_pending`
 * unacknowledged); a loop writes what has arrived in rounds of whole messages, up to
 * `windowEvents` events, one workspace at a time, the fewest events first (writeFairly), so a
 * workspace flooding the stream neither delays another's events in the same round behind its own
 * nor, once its pending deliveries reach their bound, costs more than reading its events. A message
 * is acknowledged only once its events are written; while the database is down the write is
 * retried and the messages held are kept from redelivery (working()). An event no write will take
 * (writeEach) is dropped, counted and logged, and a message none of whose events could be written
 * is terminated, so it holds up no other workspace's events. A redelivered message adds nothing
 * (intake is idempotent on webhook and event id), so nothing is lost and nothing is delivered twice.
 * The loop marks its progress (`webhooks.intake`) per round, and every second while nothing waits.
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
  // Bounded in bytes (CONSUMER_PULL_BYTES): a hundred messages of up to 512 KiB each would let a
  // backlog crowd the connection until nats-server drops it as a slow consumer.
  const messages = await consumer.consume({ max_bytes: CONSUMER_PULL_BYTES });
  const stats = { taken: 0, messages: 0, undecodable: 0, failedWrites: 0, unwritable: 0 };
  const progress = loopProgress("webhooks.intake");
  const wakeup = new Wakeup();
  const arrived: JsMsg[] = [];
  let reading = true;
  let stopping = false;

  // What has arrived is held to ARRIVED_BYTES (JetStream's max_ack_pending alone would let a
  // thousand messages of up to 512 KiB wait in memory): the reader waits while it is full.
  let arrivedBytes = 0;
  const room = new Wakeup();
  const reader = (async () => {
    for await (const msg of messages) {
      arrived.push(msg);
      arrivedBytes += msg.data.length;
      wakeup.notify();
      while (arrivedBytes >= (options.maxArrivedBytes ?? ARRIVED_BYTES) && !stopping) {
        await room.wait(IDLE_MARK_MS);
      }
    }
  })()
    .catch((err: unknown) => log.error({ err }, "webhook intake stopped reading on an error"))
    .finally(() => {
      reading = false;
      wakeup.notify();
    });

  /** The next round: whole messages, decoded, up to windowEvents events (at least one message). */
  const nextRound = () => {
    const round: { msg: JsMsg; events: EventRecord[] }[] = [];
    let events = 0;
    while (arrived.length > 0) {
      const msg = arrived[0]!;
      let decoded: EventRecord[];
      try {
        decoded = decodeDomainEvents(msg.data, msg.headers?.get(EVENT_BATCH_HEADER) === "1").map(
          eventRecordOf,
        );
      } catch (err) {
        arrived.shift();
        arrivedBytes -= msg.data.length;
        room.notify();
        stats.undecodable++;
        stats.messages++;
        webhookEventsDropped.inc({ reason: "undecodable" });
        log.error({ err: (err as Error).message, seq: msg.seq }, "undecodable domain event dropped");
        msg.term();
        continue;
      }
      if (round.length > 0 && events + decoded.length > (options.windowEvents ?? WINDOW_EVENTS)) break;
      arrived.shift();
      arrivedBytes -= msg.data.length;
      room.notify();
      round.push({ msg, events: decoded });
      events += decoded.length;
    }
    return round;
  };

  const writer = (async () => {
    while (!stopping && (reading || arrived.length > 0)) {
      const round = nextRound();
      if (round.length === 0) {
        progress.mark();
        await wakeup.wait(IDLE_MARK_MS);
        continue;
      }
      const messageOf = new Map<EventRecord, number>();
      round.forEach((m, i) => {
        for (const e of m.events) messageOf.set(e, i);
      });
      const dropped = round.map(() => 0);
      let backoff = 100;
      const left = await writeFairly(
        round.flatMap((m) => m.events),
        {
          store,
          clock,
          log,
          firstDelayMs: options.firstDelayMs,
          maxTries: options.maxTries,
          written: (_events, deliveries) => {
            stats.taken += deliveries;
          },
          wait: async (_tries, err) => {
            stats.failedWrites++;
            log.warn({ err: (err as Error).message, retryInMs: backoff }, "webhook intake failed; retrying");
            if (stopping) return false;
            for (const m of round) m.msg.working();
            for (const msg of arrived) msg.working();
            await sleep(backoff);
            backoff = Math.min(backoff * 2, maxBackoffMs);
            return true;
          },
          unwritable: (event, err) => {
            const i = messageOf.get(event)!;
            dropped[i]!++;
            stats.unwritable++;
            webhookEventsDropped.inc({ reason: "unwritable" });
            log.error(
              {
                err: (err as Error).message,
                eventId: event.id,
                workspaceId: event.workspaceId,
                seq: round[i]!.msg.seq,
              },
              "webhook intake: event cannot be written, dropped",
            );
          },
        },
      );
      // Given up (stopping while the database is down): nothing is acknowledged, so JetStream hands
      // the round's messages over again.
      if (left > 0) break;
      round.forEach((m, i) => {
        if (dropped[i] === m.events.length && dropped[i]! > 0) m.msg.term();
        else m.msg.ack();
        stats.messages++;
      });
      progress.mark();
    }
  })().catch((err: unknown) => log.error({ err }, "webhook intake stopped on an error"));

  return {
    stats: () => ({ ...stats }),
    async stop() {
      stopping = true;
      wakeup.notify();
      room.notify();
      await messages.close();
      await reader;
      await writer;
    },
  };
}
