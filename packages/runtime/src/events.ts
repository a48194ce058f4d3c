import type { Message } from "@bufbuild/protobuf";
import { WireWriter } from "@latchkey/proto/codecs/wire/writer";
import { type JetStreamClient, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { DOMAIN_EVENT_SUBJECT } from "./domain-events.ts";
import type { EventSink, EventSinkStats, EventType } from "./event-sink.ts";
import { newId } from "./ids.ts";
import type { Logger } from "./logger.ts";
import { watchEventSink } from "./metrics.ts";
import { type LoopProgress, loopProgress } from "./progress.ts";

/** The stream every event subject is stored in. */
export const EVENTS_STREAM = "LATCHKEY_EVENTS";
export const EVENT_SUBJECTS = [
  "events.keys.verified",
  "events.ratelimit.checked",
  DOMAIN_EVENT_SUBJECT,
] as const;

/**
 * The most bytes a JetStream consumer of the events stream asks for at once (its pull's
 * max_bytes). nats-server cuts a connection off as a slow consumer once 64 MiB (its max_pending)
 * wait to be written to it: a pull bounded by message count alone lets a consumer catching up on
 * a backlog of batches (up to MAX_BATCH_BYTES each) be handed far more than that while its event
 * loop is busy, and every request waiting on the connection is lost with it.
 */
export const CONSUMER_PULL_BYTES = 8 * 1024 * 1024;

/** Creates (or widens) the events stream; idempotent. */
export async function ensureEventsStream(nc: NatsConnection): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const config = {
    name: EVENTS_STREAM,
    subjects: [...EVENT_SUBJECTS],
    duplicate_window: 10 * 60 * 1_000_000_000, // ns: a publisher retry within 10 min is dropped as a duplicate
    max_age: 7 * 24 * 3600 * 1_000_000_000, // ns: the consumer has a week to catch up
  };
  try {
    await jsm.streams.info(EVENTS_STREAM);
    await jsm.streams.update(EVENTS_STREAM, config);
  } catch {
    await jsm.streams.add(config);
  }
}

interface Pending {
  subject: string;
  id: string;
  data: Uint8Array;
  /** The event's workspace ("" for an event that names none), for its share of the buffer. */
  workspace: string;
}

/** The header marking a JetStream message whose data is a common.v1.EventBatch. */
export const EVENT_BATCH_HEADER = "Latchkey-Event-Batch";

/** One JetStream message of a batch being sent: its id stays the same on every retry. */
interface Outgoing {
  subject: string;
  msgId: string;
  data: Uint8Array;
  sent: boolean;
}

/** Leaves room under NATS's default 1 MiB payload limit. */
const MAX_BATCH_BYTES = 512 * 1024;

/**
 * Buffers events in memory and publishes them to JetStream in batches, off the
 * request path: the events of one batch and subject travel as one message (an
 * EventBatch), so the cost of an acknowledged publish is paid per batch, not
 * per event (what one per event cost: docs/architecture.md, Measured settings).
 * While NATS is unreachable events wait (up to `maxBuffered`; the default
 * holds 60 s at 3,000 events/s) and the same messages are re-sent with the
 * same message ids when it returns, so JetStream drops any it already holds:
 * nothing is lost or counted twice.
 */
export class JetStreamEventSink implements EventSink {
  private queue: Pending[] = [];
  private head = 0;
  private published = 0;
  private dropped = 0;
  private running = false;
  private timer: NodeJS.Timeout;
  private js: JetStreamClient;
  private lastDropLog = 0;
  /** The batch being sent, kept as is until every message of it is acknowledged. */
  private sending: { events: number; messages: Outgoing[] } | undefined;
  private readonly batchPrefix = newId("evb");
  /** Events in the buffer by workspace. */
  private readonly held = new Map<string, number>();
  private readonly progress: LoopProgress;
  private batches = 0;

  constructor(
    nc: NatsConnection,
    private readonly log: Logger,
    private readonly options: {
      maxBuffered?: number;
      batchSize?: number;
      intervalMs?: number;
      /** Marked at each batch acknowledged and each tick with nothing waiting; `events.publish` by default. */
      progress?: LoopProgress;
    } = {},
  ) {
    this.progress = options.progress ?? loopProgress("events.publish");
    this.js = jetstream(nc, { timeout: 2_000 });
    this.timer = setInterval(() => void this.pump(), options.intervalMs ?? 50);
    this.timer.unref();
    watchEventSink(this);
  }

  publish<M extends Message>(type: EventType<M>, id: string, message: M): void {
    const subject = type.subject;
    const max = this.options.maxBuffered ?? 200_000;
    const named = (message as { workspaceId?: unknown }).workspaceId;
    const workspace = typeof named === "string" ? named : "";
    const held = this.held.get(workspace) ?? 0;
    // No workspace holds more than half the buffer: while NATS is away, one workspace's flood of
    // verifications leaves the other half to every other workspace's events.
    if (this.queue.length - this.head >= max || held >= max / 2) {
      this.dropped++;
      const now = Date.now();
      if (now - this.lastDropLog > 5_000) {
        this.lastDropLog = now;
        this.log.error(
          { dropped: this.dropped, subject, workspaceId: workspace, full: held < max / 2 },
          held < max / 2
            ? "event buffer full: events dropped"
            : "a workspace's half of the event buffer is full: its events dropped",
        );
      }
      return;
    }
    this.held.set(workspace, held + 1);
    this.queue.push({ subject, id, data: type.encode(message), workspace });
  }

  stats(): EventSinkStats {
    return { buffered: this.queue.length - this.head, published: this.published, dropped: this.dropped };
  }

  async flush(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length - this.head > 0 && Date.now() < deadline) {
      await this.pump();
      if (this.queue.length - this.head > 0) await new Promise((r) => setTimeout(r, 50));
    }
  }

  close(): void {
    clearInterval(this.timer);
  }

  /** Sends the next batch; on failure the same batch is retried on the next tick. */
  private async pump(): Promise<void> {
    if (this.running) return;
    if (this.sending === undefined && this.queue.length - this.head === 0) {
      this.progress.mark();
      return;
    }
    this.running = true;
    try {
      while (this.sending !== undefined || this.queue.length - this.head > 0) {
        this.sending ??= this.nextBatch();
        const batchHeader = headers();
        batchHeader.set(EVENT_BATCH_HEADER, "1");
        await Promise.all(
          this.sending.messages
            .filter((m) => !m.sent)
            .map(async (m) => {
              await this.js.publish(m.subject, m.data, { msgID: m.msgId, headers: batchHeader });
              m.sent = true;
            }),
        );
        for (let i = this.head; i < this.head + this.sending.events; i++) {
          const workspace = this.queue[i]!.workspace;
          const left = (this.held.get(workspace) ?? 1) - 1;
          if (left > 0) this.held.set(workspace, left);
          else this.held.delete(workspace);
        }
        this.head += this.sending.events;
        this.published += this.sending.events;
        this.sending = undefined;
        this.progress.mark();
        if (this.head > 50_000) {
          this.queue = this.queue.slice(this.head);
          this.head = 0;
        }
      }
    } catch (err) {
      this.log.warn(
        { err: (err as Error).message, buffered: this.queue.length - this.head },
        "event publish failed; retrying",
      );
    } finally {
      this.running = false;
    }
  }

  /** The next events from the head, one message per subject, in order; ids fixed for every retry. */
  private nextBatch(): { events: number; messages: Outgoing[] } {
    const limit = this.options.batchSize ?? 1_000;
    const bySubject = new Map<string, { id: string; data: Uint8Array }[]>();
    let events = 0;
    let bytes = 0;
    while (events < limit && this.head + events < this.queue.length) {
      const e = this.queue[this.head + events]!;
      if (events > 0 && bytes + e.data.length > MAX_BATCH_BYTES) break;
      bytes += e.data.length + e.id.length + 8;
      events++;
      const list = bySubject.get(e.subject);
      if (list) list.push({ id: e.id, data: e.data });
      else bySubject.set(e.subject, [{ id: e.id, data: e.data }]);
    }
    const batch = `${this.batchPrefix}:${this.batches++}`;
    const messages = [...bySubject].map(([subject, list]) => ({
      subject,
      msgId: `${batch}:${subject}`,
      data: encodeEventBatch(list),
      sent: false,
    }));
    return { events, messages };
  }
}

/**
 * common.v1.EventBatch written directly: the events are already encoded, so a
 * batch is their bytes framed, in one buffer (byte-identical to toBinary).
 */
export function encodeEventBatch(events: readonly { id: string; data: Uint8Array }[]): Uint8Array {
  const w = new WireWriter(64 + events.reduce((sum, e) => sum + e.data.length + e.id.length * 3 + 16, 0));
  // Every event is written, even an empty one (a repeated message field keeps its elements).
  for (const e of events) w.fork(1).string(1, e.id).bytes(2, e.data).join();
  return w.finish();
}

/** In one process (the embedded default): events go straight to the in-process consumer, as messages. */
export class DirectEventSink implements EventSink {
  private published = 0;
  constructor(private readonly deliver: (subject: string, id: string, message: Message) => void) {}
  publish<M extends Message>(type: EventType<M>, id: string, message: M): void {
    this.published++;
    this.deliver(type.subject, id, message);
  }
  async flush(): Promise<void> {}
  stats(): EventSinkStats {
    return { buffered: 0, published: this.published, dropped: 0 };
  }
}
