import { create, toBinary } from "@bufbuild/protobuf";
import { OverridesChangedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { type Bus, type EventSink, newId } from "@latchkey/runtime";
import { WireWriter } from "@latchkey/runtime/wire/writer";

export const SUBJECT_CHECKED = "events.ratelimit.checked";
export const SUBJECT_OVERRIDES_CHANGED = "events.ratelimit.overrides_changed";

/** For processes that record no analytics: checks then build no event at all. */
export const noEvents: EventSink = {
  publish() {},
  flush: async () => {},
  stats: () => ({ buffered: 0, published: 0, dropped: 0 }),
};

/** One counted standalone check, as analytics records it, by ratelimit.v1.RatelimitChecked's field names. */
export interface Checked {
  requestId: string;
  /** The check's position in its request: 0 for limit, 0..n-1 for multiLimit. */
  index: number;
  time: number;
  workspaceId: string;
  namespaceId: string;
  identifier: string;
  passed: boolean;
  limit: number;
  remaining: number;
  reset: number;
  cost: number;
  overrideId: string;
  latency: number;
}

/** Every event the ratelimit context emits. */
export interface RatelimitEvents {
  /** False when no sink records checks, so the request path can skip building them. */
  readonly recording: boolean;
  /**
   * ratelimit.v1.RatelimitChecked on events.ratelimit.checked, through the
   * event sink (JetStream in production), message id "<requestId>:<index>" so
   * a re-sent event is dropped. Encoded and handed to the sink after the
   * request has been answered.
   */
  checked(event: Checked): void;
  /** ratelimit.v1.OverridesChanged on the bus: every replica reloads the namespace's overrides before its next check. */
  /** Resolves once the change is on its way to every replica (Bus.flushed). */
  overridesChanged(workspaceId: string, namespaceId: string): Promise<void>;
}

/** ratelimit.v1.RatelimitChecked in its binary form, written field by field (see the runtime's wire/writer.ts). */
export function encodeChecked(e: Checked, w = new WireWriter()): Uint8Array {
  return writeChecked(e, w).finish();
}

function writeChecked(e: Checked, w: WireWriter): WireWriter {
  return w
    .string(1, e.requestId)
    .int64(2, e.time)
    .string(3, e.workspaceId)
    .string(4, e.namespaceId)
    .string(5, e.identifier)
    .bool(6, e.passed)
    .int64(7, e.limit)
    .int64(8, e.remaining)
    .int64(9, e.reset)
    .int64(10, e.cost)
    .string(11, e.overrideId)
    .double(12, e.latency)
    .int64(13, e.index);
}

/** "<requestId>:<index>": a re-sent event is dropped, and the checks of one multiLimit stay apart. */
const messageId = (e: Checked) => (e.requestId ? `${e.requestId}:${e.index}` : newId("rlc"));

export function ratelimitEvents(bus: Bus, sink: EventSink = noEvents): RatelimitEvents {
  let queue: Checked[] = [];
  const writer = new WireWriter();
  // The events queued since the last flush are written one after the other and
  // copied out in one buffer, each handed to the sink as its own slice of it.
  let ends: number[] = [];
  const flush = () => {
    const batch = queue;
    queue = [];
    // In process (pnpm start's embedded analytics) the fields go as they are: Checked's are RatelimitChecked's.
    if (sink.publishFields) {
      for (const e of batch) sink.publishFields(SUBJECT_CHECKED, messageId(e), e);
      return;
    }
    if (ends.length < batch.length) ends = new Array(batch.length);
    for (let i = 0; i < batch.length; i++) ends[i] = writeChecked(batch[i]!, writer).length;
    const all = writer.finish();
    let start = 0;
    for (let i = 0; i < batch.length; i++) {
      const e = batch[i]!;
      sink.publish(SUBJECT_CHECKED, messageId(e), all.subarray(start, ends[i]));
      start = ends[i]!;
    }
  };
  return {
    recording: sink !== noEvents,
    checked(event) {
      if (sink === noEvents) return;
      if (queue.push(event) === 1) setImmediate(flush);
    },
    overridesChanged(workspaceId, namespaceId) {
      bus.publish(
        SUBJECT_OVERRIDES_CHANGED,
        toBinary(OverridesChangedSchema, create(OverridesChangedSchema, { workspaceId, namespaceId })),
      );
      return bus.flushed();
    },
  };
}
