import { type JetStreamClient, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "./logger.ts";
import { watchEventSink } from "./metrics.ts";

/**
 * Where services put their events (verifications, rate-limit checks). The
 * request path only appends to a buffer: publish never waits and never throws.
 */
export interface EventSink {
  /** `id` is unique per event: JetStream drops a re-sent duplicate, the consumer dedupes redeliveries. */
  publish(subject: string, id: string, data: Uint8Array): void;
  /** Publishes what is buffered; resolves when the buffer is empty or `timeoutMs` passes. */
  flush(timeoutMs?: number): Promise<void>;
  stats(): EventSinkStats;
}

export interface EventSinkStats {
  /** Events waiting in the buffer. */
  buffered: number;
  /** Events published and acknowledged by the stream. */
  published: number;
  /** Events dropped because the buffer was full: counted and logged, never silent. */
  dropped: number;
}

/** The stream every event subject is stored in. */
export const EVENTS_STREAM = "LATCHKEY_EVENTS";
export const EVENT_SUBJECTS = ["events.keys.verified", "events.ratelimit.checked"] as const;

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
}

/**
 * Buffers events in memory and publishes them to JetStream in batches, off the
 * request path. While NATS is unreachable events wait (up to `maxBuffered`;
 * the default holds 60 s at 3,000 events/s) and are re-sent with the same
 * message id when it returns, so nothing is lost or counted twice.
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

  constructor(
    nc: NatsConnection,
    private readonly log: Logger,
    private readonly options: { maxBuffered?: number; batchSize?: number; intervalMs?: number } = {},
  ) {
    this.js = jetstream(nc, { timeout: 2_000 });
    this.timer = setInterval(() => void this.pump(), options.intervalMs ?? 50);
    this.timer.unref();
    watchEventSink(this);
  }

  publish(subject: string, id: string, data: Uint8Array): void {
    if (this.queue.length - this.head >= (this.options.maxBuffered ?? 200_000)) {
      this.dropped++;
      const now = Date.now();
      if (now - this.lastDropLog > 5_000) {
        this.lastDropLog = now;
        this.log.error({ dropped: this.dropped, subject }, "event buffer full: events dropped");
      }
      return;
    }
    this.queue.push({ subject, id, data });
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

  /** Sends the next batch; on failure the batch stays at the head and is retried on the next tick. */
  private async pump(): Promise<void> {
    if (this.running || this.queue.length - this.head === 0) return;
    this.running = true;
    try {
      while (this.queue.length - this.head > 0) {
        const batch = this.queue.slice(this.head, this.head + (this.options.batchSize ?? 1_000));
        await Promise.all(batch.map((e) => this.js.publish(e.subject, e.data, { msgID: e.id })));
        this.head += batch.length;
        this.published += batch.length;
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
}

/** In one process (the embedded default): events go straight to the in-process consumer. */
export class DirectEventSink implements EventSink {
  private published = 0;
  constructor(private readonly deliver: (subject: string, id: string, data: Uint8Array) => void) {}
  publish(subject: string, id: string, data: Uint8Array): void {
    this.published++;
    this.deliver(subject, id, data);
  }
  async flush(): Promise<void> {}
  stats(): EventSinkStats {
    return { buffered: 0, published: this.published, dropped: 0 };
  }
}
