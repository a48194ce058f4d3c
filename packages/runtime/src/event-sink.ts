// The event sink's shape, apart from its implementations (events.ts) so that metrics.ts can report any sink
// without importing the module that registers sinks with it.
import type { Message } from "@bufbuild/protobuf";

/**
 * One kind of event: the subject it travels on and the one encoder of its
 * message, both owned by the service that emits it (keys' KeyVerified,
 * ratelimit's RatelimitChecked).
 */
export interface EventType<M extends Message = Message> {
  readonly subject: string;
  encode(message: M): Uint8Array;
}

/**
 * Where services put their events (verifications, rate-limit checks), each as
 * its proto message: the one shape of an event everywhere. A sink that sends
 * bytes (JetStream) encodes it with its type's encoder; a sink in the same
 * process (the embedded analytics of `npm start`) takes the message as it is,
 * and the message is the sink's from then on. The request path only appends to
 * a buffer: publish never waits and never throws.
 */
export interface EventSink {
  /** `id` is unique per event: JetStream drops a re-sent duplicate, the consumer dedupes redeliveries. */
  publish<M extends Message>(type: EventType<M>, id: string, message: M): void;
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
