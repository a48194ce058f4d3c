// The event sink's shape, apart from its implementations (events.ts) so that metrics.ts can report any sink
// without importing the module that registers sinks with it.

/**
 * Where services put their events (verifications, rate-limit checks). The
 * request path only appends to a buffer: publish never waits and never throws.
 */
export interface EventSink {
  /** `id` is unique per event: JetStream drops a re-sent duplicate, the consumer dedupes redeliveries. */
  publish(subject: string, id: string, data: Uint8Array): void;
  /**
   * The same event for a sink in this process (the embedded analytics of `pnpm start`): `fields`
   * are its message's fields by their names (int64 as number), handed over instead of encoded and
   * decoded again. Publishers call it when the sink has it; the object is the sink's from then on.
   */
  publishFields?(subject: string, id: string, fields: EventFields): void;
  /** Publishes what is buffered; resolves when the buffer is empty or `timeoutMs` passes. */
  flush(timeoutMs?: number): Promise<void>;
  stats(): EventSinkStats;
}

/** An event message's fields by name, as publishFields hands them over. */
export type EventFields = object;

export interface EventSinkStats {
  /** Events waiting in the buffer. */
  buffered: number;
  /** Events published and acknowledged by the stream. */
  published: number;
  /** Events dropped because the buffer was full: counted and logged, never silent. */
  dropped: number;
}
