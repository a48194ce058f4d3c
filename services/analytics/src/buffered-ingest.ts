import type { Message } from "@bufbuild/protobuf";
import {
  type EventSink,
  type EventSinkStats,
  type EventType,
  type Logger,
  type LoopProgress,
  loopProgress,
  newId,
} from "@latchkey/runtime";
import { type AnalyticsEvent, eventOf } from "./events.ts";
import type { AnalyticsStore, RatelimitCheck, Verification } from "./store/analytics-store.ts";

export interface BufferedIngestOptions {
  /** Most rows of one kind per insert; a buffer this full is written at once, without waiting for the interval. */
  batchSize?: number;
  /** Longest a row waits in the buffer before its batch is written. */
  intervalMs?: number;
  /** Rows held, waiting or failing to be written; past it new events are dropped, counted and logged. */
  maxBuffered?: number;
  /** Wait before a failed insert is tried again. */
  retryMs?: number;
  /** Marked at each batch stored (it runs no timer while idle); loopProgress("analytics.ingest") by default. */
  progress?: LoopProgress;
}

/** Rows cut from the front of the buffers and written together under one id, retried as they are. */
interface Batch {
  id: string;
  verifications: Verification[];
  ratelimits: RatelimitCheck[];
}

/**
 * The embedded default's events, from the services straight into the store
 * without NATS: an EventSink whose publish takes the event's message as it is
 * (nothing encoded or decoded) and appends its row to a buffer (never
 * waiting, never throwing), written in batches (one statement per kind and
 * batch, not one per event), every `intervalMs` or as soon as `batchSize`
 * rows wait, one insert in flight at a time.
 *
 * Each batch is cut from the front of the buffers once, with an id of its own,
 * and a failed insert retries exactly that batch, same rows and same id, every
 * `retryMs` until it is stored; events published meanwhile wait behind it and
 * go into later batches. The store skips a batch id it has stored, so a retry
 * of an insert that landed but whose answer was lost counts nothing twice:
 * events come in process and once each, so that retry is the only repeat.
 * The buffer is bounded: while it is full, new events are dropped, counted in
 * stats() and logged. close() writes what is left.
 */
export class BufferedIngest implements EventSink {
  private verifications: Verification[] = [];
  private ratelimits: RatelimitCheck[] = [];
  /** The batch being written, or failed and waiting for its retry. */
  private batch: Batch | undefined;
  /** Batch ids are this process's prefix and a counter: unique without a lookup. */
  private readonly batchPrefix = newId("anb");
  private batches = 0;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<boolean> | undefined;
  private closed = false;
  /** The last insert failed: only the retry timer (or flush) writes, not every event past a batch's size. */
  private failing = false;
  private stored = 0;
  private dropped = 0;
  private lastDropLog = Number.NEGATIVE_INFINITY;
  private readonly batchSize: number;
  private readonly intervalMs: number;
  private readonly maxBuffered: number;
  private readonly retryMs: number;
  private readonly progress: LoopProgress;
  /** Rows in the buffer (and the batch) by workspace. */
  private readonly held = new Map<string, number>();

  constructor(
    private readonly store: AnalyticsStore,
    private readonly log: Logger,
    options: BufferedIngestOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 1_000;
    this.intervalMs = options.intervalMs ?? 100;
    this.maxBuffered = options.maxBuffered ?? 100_000;
    this.retryMs = options.retryMs ?? 1_000;
    this.progress = options.progress ?? loopProgress("analytics.ingest");
  }

  /** Rows stored: no longer their workspaces' share of the buffer. */
  private release(rows: readonly { workspaceId: string }[]): void {
    for (const { workspaceId } of rows) {
      const left = (this.held.get(workspaceId) ?? 1) - 1;
      if (left > 0) this.held.set(workspaceId, left);
      else this.held.delete(workspaceId);
    }
  }

  publish<M extends Message>(type: EventType<M>, id: string, message: M): void {
    this.ingest(type.subject, id, message);
  }

  /** An event's message by its subject (deps.ts's Ingest). */
  ingest(subject: string, id: string, message: Message): void {
    this.take(subject, eventOf(subject, id, message));
  }

  private take(subject: string, event: AnalyticsEvent): void {
    if (event.kind === "ignored") return;
    const workspace = event.row.workspaceId;
    const held = this.held.get(workspace) ?? 0;
    // No workspace holds more than half the buffer: while the store is slow or away, one workspace's
    // flood of events leaves the other half to every other workspace's.
    if (this.closed || this.buffered() >= this.maxBuffered || held >= this.maxBuffered / 2) {
      this.drop(subject);
      return;
    }
    this.held.set(workspace, held + 1);
    if (event.kind === "verification") this.verifications.push(event.row);
    else this.ratelimits.push(event.row);
    // The running write looks at the buffer again when it ends; after a failure the retry timer does.
    if (this.writing || this.failing) return;
    if (this.buffered() >= this.batchSize) {
      this.cancelTimer();
      void this.write(false);
    } else this.timer ??= this.arm(this.intervalMs);
  }

  /** Writes everything buffered now; resolves when the buffer is empty or `timeoutMs` passes. */
  async flush(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    this.cancelTimer();
    while (this.buffered() > 0 && Date.now() < deadline) {
      const ok = await (this.writing ?? this.write(true));
      if (!ok) await sleep(Math.max(0, Math.min(this.retryMs, deadline - Date.now())));
    }
    if (!this.closed && this.buffered() > 0) this.timer ??= this.arm(this.retryMs);
  }

  /**
   * Stops taking events and writes what is buffered, retrying failed inserts
   * for up to `timeoutMs`; rows still unwritten then are counted as dropped and
   * logged.
   */
  async close(timeoutMs = 5_000): Promise<void> {
    this.closed = true;
    await this.flush(timeoutMs);
    this.cancelTimer();
    const left = this.buffered();
    if (left > 0) {
      this.dropped += left;
      this.batch = undefined;
      this.verifications = [];
      this.ratelimits = [];
      this.log.error({ dropped: left }, "analytics events not stored before shutdown: dropped");
    }
  }

  /** buffered: rows waiting; published: rows written to the store; dropped: events lost (also logged). */
  stats(): EventSinkStats {
    return { buffered: this.buffered(), published: this.stored, dropped: this.dropped };
  }

  private buffered(): number {
    const batch = this.batch ? this.batch.verifications.length + this.batch.ratelimits.length : 0;
    return batch + this.verifications.length + this.ratelimits.length;
  }

  /**
   * Writes one batch (the failed one again, else what is buffered, up to
   * batchSize of each kind), then more while a full one waits (or, with
   * `drain`, until the buffer is empty); answers false when an insert failed.
   * One at a time: a second call while one runs gets the running one.
   */
  private write(drain: boolean): Promise<boolean> {
    this.writing ??= this.writeBatches(drain).finally(() => {
      this.writing = undefined;
    });
    return this.writing;
  }

  private async writeBatches(drain: boolean): Promise<boolean> {
    let ok = true;
    do {
      // Events published meanwhile are appended to the buffers, never to the batch: a retry is the same
      // rows under the same id, which is what lets the store recognise it.
      this.batch ??= this.cut();
      const batch = this.batch;
      try {
        if (batch.verifications.length > 0) {
          await this.store.insertVerifications(batch.verifications, batch.id);
          this.stored += batch.verifications.length;
          this.release(batch.verifications);
          batch.verifications = [];
        }
        if (batch.ratelimits.length > 0) {
          await this.store.insertRatelimits(batch.ratelimits, batch.id);
          this.stored += batch.ratelimits.length;
          this.release(batch.ratelimits);
          batch.ratelimits = [];
        }
        this.batch = undefined;
        this.progress.mark();
      } catch (err) {
        this.log.error(
          { err, buffered: this.buffered(), retryInMs: this.retryMs },
          "analytics batch not stored: kept for a retry",
        );
        ok = false;
      }
      this.failing = !ok;
    } while (ok && this.buffered() > 0 && (drain || this.buffered() >= this.batchSize));
    // Rows left (fewer than a batch, or a failed one) wait for the next interval or the retry.
    if (!this.closed && this.buffered() > 0) this.timer ??= this.arm(ok ? this.intervalMs : this.retryMs);
    return ok;
  }

  /** The next batch: the front of each buffer, taken out of it. */
  private cut(): Batch {
    return {
      id: `${this.batchPrefix}:${++this.batches}`,
      verifications: this.verifications.splice(0, this.batchSize),
      ratelimits: this.ratelimits.splice(0, this.batchSize),
    };
  }

  private arm(ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timer = undefined;
      void this.write(false);
    }, ms);
    timer.unref();
    return timer;
  }

  private cancelTimer() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private drop(subject: string) {
    this.dropped++;
    const now = Date.now();
    if (now - this.lastDropLog > 5_000) {
      this.lastDropLog = now;
      this.log.error(
        { dropped: this.dropped, buffered: this.buffered(), subject, closed: this.closed },
        this.closed ? "analytics ingest closed: events dropped" : "analytics buffer full: events dropped",
      );
    }
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
