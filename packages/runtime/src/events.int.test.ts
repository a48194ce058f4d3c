import { fromBinary } from "@bufbuild/protobuf";
import { EventBatchSchema } from "@latchkey/proto/common/v1/common_pb";
import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { ownNatsServer } from "../testing/nats-server.ts";
import type { EventType } from "./event-sink.ts";
import { EVENT_BATCH_HEADER, ensureEventsStream, JetStreamEventSink } from "./events.ts";
import { createLogger } from "./logger.ts";
import { LoopProgress } from "./progress.ts";

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

  it("publishes a backlog of 50,000 events that waited out a NATS outage, marking progress at each batch once NATS is back", async () => {
    const nats = await ownNatsServer();
    const nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    try {
      await ensureEventsStream(nc);
      const progress = new LoopProgress("test.events.publish");
      const sink = new JetStreamEventSink(nc, log, { intervalMs: 10, batchSize: 1_000, progress });
      await nats.stop();
      for (let i = 0; i < 50_000; i++)
        sink.publish(rawEvent("events.keys.verified"), `e${i}`, raw([i % 256]));
      await new Promise((r) => setTimeout(r, 1_000));
      // Stuck while NATS is away: nothing published, no progress to mark.
      const marksWhileAway = progress.marks;
      expect(sink.stats()).toMatchObject({ buffered: 50_000, published: 0, dropped: 0 });
      await new Promise((r) => setTimeout(r, 500));
      expect(progress.marks).toBe(marksWhileAway);
      await nats.start();
      await sink.flush(30_000);
      expect(sink.stats()).toEqual({ buffered: 0, published: 50_000, dropped: 0 });
      // 50 batches of 1,000, each marked, and idle ticks after.
      expect(progress.marks - marksWhileAway).toBeGreaterThanOrEqual(50);
      sink.close();
    } finally {
      await nc.close();
      await nats.close();
    }
  }, 60_000);

  it("keeps half of its buffer for other workspaces while NATS is away and one workspace floods it", async () => {
    const nats = await ownNatsServer();
    const nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    try {
      await ensureEventsStream(nc);
      const sink = new JetStreamEventSink(nc, log, { intervalMs: 10, batchSize: 100, maxBuffered: 1_000 });
      await nats.stop();
      const event = (workspaceId: string, i: number) => ({ ...raw([i % 256]), workspaceId });
      const type = rawEvent("events.keys.verified") as EventType<Raw & { workspaceId: string }>;
      for (let i = 0; i < 2_000; i++) sink.publish(type, `flood${i}`, event("ws_flood", i));
      for (let i = 0; i < 400; i++) sink.publish(type, `victim${i}`, event("ws_victim", i));
      // The flood keeps its half; every one of the other workspace's events is held.
      expect(sink.stats()).toEqual({ buffered: 900, published: 0, dropped: 1_500 });
      await nats.start();
      await sink.flush(30_000);
      expect(sink.stats()).toEqual({ buffered: 0, published: 900, dropped: 1_500 });
      // Once published, the flooding workspace has its half again.
      for (let i = 0; i < 10; i++) sink.publish(type, `again${i}`, event("ws_flood", i));
      expect(sink.stats().buffered + sink.stats().published).toBe(910);
      sink.close();
    } finally {
      await nc.close();
      await nats.close();
    }
  }, 60_000);
});
