import { create, toBinary } from "@bufbuild/protobuf";
import { UNHANDLED } from "@latchkey/proto/codecs/wire/reader";
import { writeOr } from "@latchkey/proto/codecs/wire/writer";
import {
  OverridesChangedSchema,
  type RatelimitChecked,
  RatelimitCheckedSchema,
} from "@latchkey/proto/ratelimit/v1/events_pb";
import { type Bus, type EventSink, type EventType, newId } from "@latchkey/runtime";

export const SUBJECT_CHECKED = "events.ratelimit.checked";
export const SUBJECT_OVERRIDES_CHANGED = "events.ratelimit.overrides_changed";

/** For processes that record no analytics: checks then build no event at all. */
export const noEvents: EventSink = {
  publish() {},
  flush: async () => {},
  stats: () => ({ buffered: 0, published: 0, dropped: 0 }),
};

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
  checked(event: RatelimitChecked): void;
  /** ratelimit.v1.OverridesChanged on the bus: every replica reloads the namespace's overrides before its next check. */
  /** Resolves once the change is on its way to every replica (Bus.flushed). */
  overridesChanged(workspaceId: string, namespaceId: string): Promise<void>;
}

/** ratelimit.v1.RatelimitChecked on events.ratelimit.checked: its one encoder is this service's. */
export const ratelimitCheckedEvent: EventType<RatelimitChecked> = {
  subject: SUBJECT_CHECKED,
  encode: encodeRatelimitChecked,
};

/**
 * ratelimit.v1.RatelimitChecked in binary, written with the runtime's one
 * writer: one per counted check, where toBinary's reflection costs more than
 * counting it. The bytes are toBinary's for every message
 * (test/in-memory/fast-codecs.test.ts).
 */
export function encodeRatelimitChecked(e: RatelimitChecked): Uint8Array {
  return writeOr(RatelimitCheckedSchema, e, (w) => {
    if (e.$unknown !== undefined) throw UNHANDLED;
    w.string(1, e.requestId)
      .bigint64(2, e.time)
      .string(3, e.workspaceId)
      .string(4, e.namespaceId)
      .string(5, e.identifier)
      .bool(6, e.passed)
      .bigint64(7, e.limit)
      .bigint64(8, e.remaining)
      .bigint64(9, e.reset)
      .bigint64(10, e.cost)
      .string(11, e.overrideId)
      .double(12, e.latency)
      .int64(13, e.index)
      .int64(14, e.count);
  });
}

/** "<requestId>:<index>": a re-sent event is dropped, and the checks of one multiLimit stay apart. */
const messageId = (e: RatelimitChecked) => (e.requestId ? `${e.requestId}:${e.index}` : newId("rlc"));

export function ratelimitEvents(bus: Bus, sink: EventSink = noEvents): RatelimitEvents {
  // Checks are handed to the sink after the request has been answered (a sink that sends bytes encodes them then).
  let queue: RatelimitChecked[] = [];
  const flush = () => {
    const batch = queue;
    queue = [];
    for (const e of batch) sink.publish(ratelimitCheckedEvent, messageId(e), e);
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
