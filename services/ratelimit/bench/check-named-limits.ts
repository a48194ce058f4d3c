import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  decodeCheckNamedLimitsRequest,
  encodeCheckNamedLimitsResponse,
} from "@latchkey/proto/codecs/ratelimit";
import {
  CheckNamedLimitsRequestSchema,
  CheckNamedLimitsResponseSchema,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { createLogger } from "@latchkey/runtime";
import { createMemoryRatelimitDeps } from "../src/deps.ts";
import { checkNamedLimits } from "../src/rpc/checkNamedLimits.ts";
import { formatSplit, splitCpuPerItem } from "./split.ts";

/**
 * The service's share of a verification's named limits: µs per verification
 * of a CheckNamedLimits call of BATCH groups (default 22, what keys sends
 * under the probe's load), one limit each, split into decoding the request, the
 * handler, and encoding the response (what the server adds on top is HTTP). Run:
 *   node --import tsx services/ratelimit/bench/check-named-limits.ts   (add --cpu-prof to profile)
 * KEYS (default 1): distinct keys the groups cycle through.
 */
const BATCH = Number(process.env["BATCH"] ?? 22);
const KEYS = Number(process.env["KEYS"] ?? 1);
const SECONDS = Number(process.env["SECONDS"] ?? 5);
const deps = createMemoryRatelimitDeps({ log: createLogger("ratelimit", "silent") });
const bytes = toBinary(
  CheckNamedLimitsRequestSchema,
  create(CheckNamedLimitsRequestSchema, {
    groups: Array.from({ length: BATCH }, (_, i) => ({
      workspaceId: "ws_3kQpZ8mVtR2xYc",
      limits: [
        { owner: `key_7HkLm2NqPx${i % KEYS}`, name: "requests", limit: 1_000_000_000n, duration: 60_000n },
      ],
    })),
  }),
);
// CODEC=protobuf-es decodes and encodes by reflection, as a server without the hand-written codecs does.
const reflective = process.env["CODEC"] === "protobuf-es";
const decodeRequest = reflective
  ? (b: Uint8Array) => fromBinary(CheckNamedLimitsRequestSchema, b)
  : decodeCheckNamedLimitsRequest;
const encodeResponse = reflective
  ? (m: Parameters<typeof encodeCheckNamedLimitsResponse>[0]) => toBinary(CheckNamedLimitsResponseSchema, m)
  : encodeCheckNamedLimitsResponse;
const handler = checkNamedLimits(deps);

const first = await handler(fromBinary(CheckNamedLimitsRequestSchema, bytes));
if (first.groups.some((g) => !g.passed)) throw new Error("a group failed in the warm-up");

const r = await splitCpuPerItem({
  bytes,
  items: BATCH,
  seconds: SECONDS,
  decode: decodeRequest,
  handle: handler,
  encode: encodeResponse,
});
process.stdout.write(`CheckNamedLimits of ${BATCH}: ${formatSplit(r, "verification")}\n`);
