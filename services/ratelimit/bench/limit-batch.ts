import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { LimitBatchRequestSchema, LimitBatchResponseSchema } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { createLogger, type EventSink } from "@latchkey/runtime";
import { decodeLimitBatchRequest, encodeLimitBatchResponse } from "@latchkey/runtime/wire/ratelimit-codecs";
import { createMemoryRatelimitDeps } from "../src/deps.ts";
import { limitBatch } from "../src/rpc/limitBatch.ts";

/**
 * The service's share of ratelimits.limit: µs per check of a LimitBatch of 64
 * checks for one identifier, in process, namespace and overrides cached, split
 * into decoding the request, the handler, and encoding the response (what the
 * Connect server adds on top is HTTP). Run:
 *   node --import tsx services/ratelimit/bench/limit-batch.ts        (add --cpu-prof to profile)
 * EVENTS=1 records analytics events to a sink that drops them (their encoding included).
 */
const BATCH = 64;
const SECONDS = Number(process.env["SECONDS"] ?? 5);
const recording = process.env["EVENTS"] === "1";
const dropping: EventSink = {
  publish() {},
  flush: async () => {},
  stats: () => ({ buffered: 0, published: 0, dropped: 0 }),
};
const deps = createMemoryRatelimitDeps({
  log: createLogger("ratelimit", "silent"),
  ...(recording ? { events: dropping } : {}),
});
const caller = create(CallerSchema, {
  workspaceId: "ws_bench",
  rootKeyId: "rk_bench",
  permissions: ["ratelimit.*.limit", "ratelimit.*.create_namespace"],
});
const bytes = toBinary(
  LimitBatchRequestSchema,
  create(LimitBatchRequestSchema, {
    callers: [caller],
    items: Array.from({ length: BATCH }, (_, i) => ({
      callerIndex: 0,
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

async function run(seconds: number) {
  let decode = 0;
  let handle = 0;
  let encode = 0;
  let batches = 0;
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    for (let i = 0; i < 50; i++) {
      const t0 = performance.now();
      const req = decodeRequest(bytes);
      const t1 = performance.now();
      const res = await handler(req);
      const t2 = performance.now();
      encodeResponse(res);
      const t3 = performance.now();
      decode += t1 - t0;
      handle += t2 - t1;
      encode += t3 - t2;
      // Let queued events be encoded and handed over, as between requests in production.
      if (recording) await new Promise((r) => setImmediate(r));
    }
    batches += 50;
  }
  return { decode, handle, encode, checks: batches * BATCH };
}

// The machines are shared: CPU time of this process per check is steadier than wall time.
await run(1);
const cpu = process.cpuUsage();
const r = await run(SECONDS);
const used = process.cpuUsage(cpu);
const cpuPerCheck = (used.user + used.system) / r.checks;
const wall = r.decode + r.handle + r.encode;
const share = (ms: number) => `${((ms / wall) * cpuPerCheck).toFixed(2).padStart(6)}`;
process.stdout.write(
  `LimitBatch of ${BATCH}${recording ? " +events" : ""}: ${cpuPerCheck.toFixed(2)} µs CPU per check` +
    ` (decode ${share(r.decode)}, handler ${share(r.handle)}, encode ${share(r.encode)})\n`,
);
