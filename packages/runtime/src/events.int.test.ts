import { fromBinary } from "@bufbuild/protobuf";
import { EventBatchSchema } from "@latchkey/proto/common/v1/common_pb";
import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import type { EventType } from "./event-sink.ts";
import { EVENT_BATCH_HEADER, ensureEventsStream, JetStreamEventSink } from "./events.ts";
import { createLogger } from "./logger.ts";

/** An event that is its bytes, for a sink that only carries them. */
interface Raw {
  $typeName: "test.Raw";
  data: Uint8Array;
}
const raw = (bytes: number[]): Raw => ({ $typeName: "test.Raw", data: new Uint8Array(bytes) });
const rawEvent = (subject: string): EventType<Raw> => ({ subject, encode: (m) => m.data });

const natsUrl = process.env["TEST_NATS_URL"] ?? process.env["NATS_URL"] ?? "nats://127.0.0.1:4222";
const log = createLogger("events-test", "silent");

describe("JetStreamEventSink", () => {
  it("publishes the events of a batch and subject as one message, in order, each with its own id", async () => {
    const nc = await connect({ servers: natsUrl });
    try {
      await ensureEventsStream(nc);
      const run = Math.random().toString(36).slice(2, 10);
      const seen = new Map<string, { batches: number; ids: string[] }>();
      const markers = new Set<string | undefined>();
      const subjects = ["events.keys.verified", "events.ratelimit.checked"];
      const subs = subjects.map((subject) => {
        seen.set(subject, { batches: 0, ids: [] });
        return nc.subscribe(subject, {
          callback: (_err, msg) => {
            const ids = fromBinary(EventBatchSchema, msg.data)
              .events.map((e) => e.id)
              .filter((id) => id.startsWith(run));
            if (ids.length === 0) return; // another test's events
            markers.add(msg.headers?.get(EVENT_BATCH_HEADER));
            const s = seen.get(subject)!;
            s.batches++;
            s.ids.push(...ids);
          },
        });
      });
      const sink = new JetStreamEventSink(nc, log, { intervalMs: 10, batchSize: 1_000 });
      for (let i = 0; i < 2_500; i++) sink.publish(rawEvent(subjects[0]!), `${run}:v${i}`, raw([i % 256]));
      for (let i = 0; i < 10; i++) sink.publish(rawEvent(subjects[1]!), `${run}:r${i}`, raw([i]));
      await sink.flush(10_000);
      sink.close();
      await nc.flush();
      expect(sink.stats()).toEqual({ buffered: 0, published: 2_510, dropped: 0 });
      // 1,000 + 1,000 + 500 verifications; the 10 checks ride in the third batch.
      expect(seen.get(subjects[0]!)).toEqual({
        batches: 3,
        ids: Array.from({ length: 2_500 }, (_, i) => `${run}:v${i}`),
      });
      expect(seen.get(subjects[1]!)).toEqual({
        batches: 1,
        ids: Array.from({ length: 10 }, (_, i) => `${run}:r${i}`),
      });
      expect([...markers]).toEqual(["1"]);
      for (const sub of subs) sub.unsubscribe();
    } finally {
      await nc.close();
    }
  });
});
