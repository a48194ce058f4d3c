import { create, toBinary } from "@bufbuild/protobuf";
import { KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import {
  connectNats,
  createLogger,
  EVENT_BATCH_HEADER,
  encodeEventBatch,
  ensureEventsStream,
} from "@latchkey/runtime";
import { ownNatsServer } from "@latchkey/runtime/testing/nats-server";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { startConsumer } from "./consumer.ts";
import { createMemoryAnalyticsDeps } from "./deps.ts";
import { KEY_VERIFIED } from "./events.ts";

// A consumer catching up on a backlog of large batches (what a start after an outage finds) must
// not be handed more than nats-server lets wait for one connection (max_pending, 64 MiB): past it
// the server cuts the connection off as a slow consumer, and every JetStream request waiting on it
// (a start's stream and consumer setup) times out.

const MESSAGES = 200;
const EVENTS_PER_MESSAGE = 1_000;
let nats: Awaited<ReturnType<typeof ownNatsServer>> | undefined;
afterAll(async () => {
  await nats?.close();
});

describe("the analytics consumer with a backlog larger than nats-server's max_pending", () => {
  it("is handed it a few MiB at a time: no slow consumer, JetStream requests on its connection answered, every event stored", async () => {
    nats = await ownNatsServer();
    const filler = await connectNats(nats.url, "filler");
    await ensureEventsStream(filler);
    const js = jetstream(filler);
    const batch = headers();
    batch.set(EVENT_BATCH_HEADER, "1");
    let bytes = 0;
    for (let m = 0; m < MESSAGES; m += 20) {
      await Promise.all(
        Array.from({ length: 20 }, (_, i) => {
          const message = m + i;
          const data = encodeEventBatch(
            Array.from({ length: EVENTS_PER_MESSAGE }, (_, e) => ({
              id: `ev_${message}_${e}`,
              data: toBinary(
                KeyVerifiedSchema,
                create(KeyVerifiedSchema, {
                  requestId: `req_${message}_${e}`,
                  time: BigInt(Date.now()),
                  workspaceId: "ws_backlog",
                  apiId: "api_backlog",
                  keyId: `key_${e}`,
                  outcome: "VALID",
                  tags: ["t".repeat(400)],
                }),
              ),
            })),
          );
          bytes += data.length;
          return js.publish(KEY_VERIFIED, data, { headers: batch });
        }),
      );
    }
    await filler.close();
    expect(bytes).toBeGreaterThan(64 * 1024 * 1024);

    // One connection for the consumer and the JetStream API, as a process had before its consumers
    // got connections of their own: the bound must hold even so.
    const nc = await connectNats(nats.url, "shared");
    const disconnects: string[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === "disconnect") disconnects.push(s.type);
    })();
    const log = createLogger("analytics", "silent");
    const deps = createMemoryAnalyticsDeps({ log });
    const consumer = await startConsumer({ nats: nc, store: deps.store, log, durable: "backlog" });
    try {
      const answers: number[] = [];
      const jsm = await jetstreamManager(nc, { timeout: 5_000 });
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        await jsm.getAccountInfo();
        answers.push(performance.now() - started);
      }
      const deadline = Date.now() + 90_000;
      while (consumer.stats().acked < MESSAGES * EVENTS_PER_MESSAGE && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
      }
      const stats = consumer.stats();
      expect({ acked: stats.acked, stored: stats.inserted + stats.duplicates }).toEqual({
        acked: MESSAGES * EVENTS_PER_MESSAGE,
        stored: MESSAGES * EVENTS_PER_MESSAGE,
      });
      expect(nats.log()).not.toContain("Slow Consumer");
      expect(disconnects).toEqual([]);
      // Well inside the API's 5 s timeout even while the consumer works through the backlog.
      expect(Math.max(...answers)).toBeLessThan(3_000);
    } finally {
      await consumer.stop(5_000);
      await nc.close();
    }
  }, 120_000);
});
