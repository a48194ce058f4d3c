import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { decodeLimitBatchRequest, encodeLimitBatchResponse } from "@latchkey/proto/codecs/ratelimit";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { LimitBatchRequestSchema, LimitBatchResponseSchema } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import {
  createLogger,
  type EventSink,
  ensureEventsStream,
  JetStreamEventSink,
  NatsBus,
} from "@latchkey/runtime";
import { createMemoryRatelimitDeps } from "../src/deps.ts";
import { limitBatch } from "../src/rpc/limitBatch.ts";
import { testClient, uniquePrefix } from "../testing/redis.ts";
import { formatSplit, splitCpuPerItem } from "./split.ts";

/**
 * The service's share of ratelimits.limit: µs per check of a LimitBatch of 64
 * checks for one identifier, in process, namespace and overrides cached, split
 * into decoding the request, the handler, and encoding the response (what the
 * Connect server adds on top is HTTP). Run:
 *   node --import tsx services/ratelimit/bench/limit-batch.ts        (add --cpu-prof to profile)
 * EVENTS=1 records analytics events to a sink that drops them (their encoding included);
 * EVENTS=nats to JetStream (NATS_URL, default the local one), as the service does.
 * WORKSPACES=n spreads the items over n workspaces.
 * STORE=redis counts in Redis (REDIS_URL, default the local one; the CPU is this process's only).
 */
const BATCH = 64;
const SECONDS = Number(process.env["SECONDS"] ?? 5);
const recording = process.env["EVENTS"] === "1" || process.env["EVENTS"] === "nats";
const dropping: EventSink = {
  publish() {},
  flush: async () => {},
  stats: () => ({ buffered: 0, published: 0, dropped: 0 }),
};
// EVENTS=nats publishes them to JetStream (NATS_URL, default the local one), as main.ts does.
const nats =
  process.env["EVENTS"] === "nats"
    ? await NatsBus.connect(
        process.env["NATS_URL"] ?? "nats://127.0.0.1:4222",
        createLogger("bench", "silent"),
        "bench",
      )
    : undefined;
if (nats) await ensureEventsStream(nats.nc);
const sink = nats ? new JetStreamEventSink(nats.nc, createLogger("bench", "silent")) : dropping;
const redis =
  process.env["STORE"] === "redis"
    ? { client: await testClient(process.env["REDIS_URL"]), prefix: uniquePrefix("bench") }
    : undefined;
const deps = createMemoryRatelimitDeps({
  log: createLogger("ratelimit", "silent"),
  ...(redis ? { redis } : {}),
  ...(recording ? { events: sink } : {}),
});
// WORKSPACES=n: the items come from n workspaces in turn (a gateway's batch of many tenants).
const WORKSPACES = Number(process.env["WORKSPACES"] ?? 1);
const callers = Array.from({ length: WORKSPACES }, (_, w) =>
  create(CallerSchema, {
    workspaceId: WORKSPACES === 1 ? "ws_bench" : `ws_bench${w}`,
    rootKeyId: "rk_bench",
    permissions: ["ratelimit.*.limit", "ratelimit.*.create_namespace"],
  }),
);
const bytes = toBinary(
  LimitBatchRequestSchema,
  create(LimitBatchRequestSchema, {
    callers,
    items: Array.from({ length: BATCH }, (_, i) => ({
      callerIndex: i % WORKSPACES,
      request: {
        requestId: `req_${i}`,
        check: { namespace: "bench", identifier: "user_1", limit: 1_000_000_000n, duration: 60_000n },
      },
    })),
  }),
);
// CODEC=protobuf-es decodes and encodes by reflection, as a server without the hand-written codecs does.
const reflective = process.env["CODEC"] === "protobuf-es";
const decodeRequest = reflective
  ? (b: Uint8Array) => fromBinary(LimitBatchRequestSchema, b)
  : decodeLimitBatchRequest;
const encodeResponse = reflective
  ? (m: Parameters<typeof encodeLimitBatchResponse>[0]) => toBinary(LimitBatchResponseSchema, m)
  : encodeLimitBatchResponse;
const handler = limitBatch(deps);

const first = await handler(fromBinary(LimitBatchRequestSchema, bytes));
if (first.results.some((r) => r.result.case !== "response")) throw new Error("a check failed in the warm-up");

const r = await splitCpuPerItem({
  bytes,
  items: BATCH,
  seconds: SECONDS,
  decode: decodeRequest,
  handle: handler,
  encode: encodeResponse,
  ...(recording ? { between: () => new Promise<void>((r) => setImmediate(r)) } : {}),
});
process.stdout.write(
  `LimitBatch of ${BATCH}${WORKSPACES > 1 ? ` from ${WORKSPACES} workspaces` : ""}${recording ? " +events" : ""}${redis ? " (Redis)" : ""}: ${formatSplit(r, "check")}\n`,
);
redis?.client.disconnect();
if (nats) {
  await sink.flush();
  await nats.close();
}
