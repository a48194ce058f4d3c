// Analytics pipeline bench: JetStreamEventSink -> LATCHKEY_EVENTS -> consumer -> ClickHouse.
// Prints the events/s sustained into ClickHouse and the lag (now minus the newest stored event's time) at a steady rate.
//   npx tsx services/analytics/bench.ts [events=100000] [steadySeconds=10] [steadyRate]
// NATS_URL and CLICKHOUSE_URL default to the servers scripts/services.sh runs; a scratch database and durable are removed after.
import { randomBytes } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@clickhouse/client";
import { KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { createLogger, EVENTS_STREAM, JetStreamEventSink } from "@latchkey/runtime";
import { AckPolicy, DeliverPolicy, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { openClickHouse } from "./src/clickhouse.ts";
import { startConsumer } from "./src/consumer.ts";
import { KEY_VERIFIED } from "./src/events.ts";
import { migrateClickHouse } from "./src/migrations.ts";
import { ClickHouseAnalyticsStore } from "./src/store/clickhouse-analytics-store.ts";

const N = Number(process.argv[2] ?? 100_000);
const STEADY_S = Number(process.argv[3] ?? 10);
/** Events/s of the steady phase; default half of what the slower of publisher and consumer sustained. */
const STEADY_RATE = process.argv[4] ? Number(process.argv[4]) : undefined;
const natsUrl = process.env["NATS_URL"] ?? "nats://127.0.0.1:4222";
const chBase = process.env["CLICKHOUSE_URL"] ?? "http://127.0.0.1:8123";
const log = createLogger("analytics-bench", "warn");
const say = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const tag = randomBytes(4).toString("hex");
const database = `latchkey_bench_${tag}`;
const url = new URL(chBase);
url.pathname = `/${database}`;
const { client } = await openClickHouse(url.toString());
await migrateClickHouse(client);
const nats = await connect({ servers: natsUrl });
const durable = `analytics_bench_${tag}`;
// The durable exists before anything is published, so phase 1 measures the consumer draining a backlog on its own.
const jsm = await jetstreamManager(nats);
await jsm.consumers.add(EVENTS_STREAM, {
  durable_name: durable,
  ack_policy: AckPolicy.Explicit,
  deliver_policy: DeliverPolicy.New,
});
const sink = new JetStreamEventSink(nats, log, { maxBuffered: N + 10_000 });

let seq = 0;
function publish(count: number) {
  const now = Date.now();
  for (let i = 0; i < count; i++) {
    const id = `req_${tag}_${seq++}`;
    const data = toBinary(
      KeyVerifiedSchema,
      create(KeyVerifiedSchema, {
        requestId: id,
        time: BigInt(now),
        workspaceId: "ws_bench",
        apiId: "api_bench",
        keyId: `key_${seq % 1000}`,
        outcome: seq % 10 === 0 ? "RATE_LIMITED" : "VALID",
        tags: seq % 2 ? ["env=prod", `path=/v${seq % 7}`] : [],
        spentCredits: 1n,
        latency: 0.4,
      }),
    );
    sink.publish(KEY_VERIFIED, id, data);
  }
}

async function waitFor(total: number) {
  while (consumer.stats().acked < total) await sleep(20);
}

// 1. Backlog: N events published first, then the consumer starts and drains them into ClickHouse.
const t0 = performance.now();
publish(N);
await sink.flush(120_000);
const published = performance.now();
const publishRate = N / ((published - t0) / 1000);
say(
  `publisher (JetStreamEventSink): ${N} events in ${(published - t0).toFixed(0)} ms = ${Math.round(publishRate)} events/s`,
);
const consumer = await startConsumer({ nats, store: new ClickHouseAnalyticsStore(client), log, durable });
const t1 = performance.now();
await waitFor(N);
const rate = N / ((performance.now() - t1) / 1000);
say(`consumer: drained ${N} events into ClickHouse at ${Math.round(rate)} events/s`);

// 2. Steady load at half that rate: the lag between an event's time and its insert, sampled per batch.
const steady = STEADY_RATE ?? Math.max(100, Math.round(Math.min(rate, publishRate) / 2));
const lags: number[] = [];
let last = consumer.stats().acked;
const sampler = setInterval(() => {
  const s = consumer.stats();
  if (s.acked !== last) lags.push(s.lagMs);
  last = s.acked;
}, 100);
const before = consumer.stats().acked;
const tickMs = 50;
const start = performance.now();
for (let t = 0; t < (STEADY_S * 1000) / tickMs; t++) {
  publish(Math.round((steady * tickMs) / 1000));
  const due = start + (t + 1) * tickMs;
  await sleep(Math.max(0, due - performance.now()));
}
await sink.flush(60_000);
await waitFor(before + Math.round((steady * tickMs) / 1000) * ((STEADY_S * 1000) / tickMs));
clearInterval(sampler);
lags.sort((a, b) => a - b);
const pct = (p: number) => lags[Math.min(lags.length - 1, Math.floor((p / 100) * lags.length))] ?? 0;
say(
  `steady: ${steady} events/s for ${STEADY_S} s; lag from event time to stored (oldest event of each batch): p50 ${pct(50)} ms, p99 ${pct(99)} ms, max ${lags.at(-1) ?? 0} ms`,
);
say(`  (batches of up to 5,000 or every 1 s: the lag floor is the 1 s flush interval)`);

await consumer.stop();
sink.close();
await jsm.consumers.delete(EVENTS_STREAM, durable).catch(() => {});
await nats.close();
await client.close();
const admin = createClient({ url: chBase });
await admin.command({ query: `DROP DATABASE IF EXISTS ${database}` });
await admin.close();
