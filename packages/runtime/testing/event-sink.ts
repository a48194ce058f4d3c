import type { Message } from "@bufbuild/protobuf";
import type { EventSink, EventType } from "../src/event-sink.ts";

/** An event sink that keeps each event: its message as handed over, and the bytes its type would send. */
export function keepingEventSink(): EventSink & {
  kept: { subject: string; id: string; message: Message; bytes: Uint8Array }[];
} {
  const kept: { subject: string; id: string; message: Message; bytes: Uint8Array }[] = [];
  return {
    kept,
    publish<M extends Message>(type: EventType<M>, id: string, message: M) {
      kept.push({ subject: type.subject, id, message, bytes: type.encode(message) });
    },
    flush: async () => {},
    stats: () => ({ buffered: 0, published: kept.length, dropped: 0 }),
  };
}
