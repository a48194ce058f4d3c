import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { VerifyKeyBatchRequestSchema, VerifyKeyBatchResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import {
  CheckNamedLimitsRequestSchema,
  CheckNamedLimitsResponseSchema,
  LimitBatchRequestSchema,
  LimitBatchResponseSchema,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
/**
 * CPU per verification of each hand-written codec that stays, against protobuf-es on the same
 * message: a batch of 22 (what a batch carries under load), in this process. docs/architecture.md
 * relates the difference to what a verification costs end to end.
 *   npx tsx services/keys/bench/codecs.ts
 */
// The runtime's text encoding, as every Latchkey process runs protobuf-es.
import "@latchkey/runtime";
import {
  decodeVerifyKeyBatchRequest,
  decodeVerifyKeyBatchResponse,
  encodeVerifyKeyBatchRequest,
} from "@latchkey/proto/codecs/keys";
import {
  decodeCheckNamedLimitsRequest,
  decodeCheckNamedLimitsResponse,
  decodeLimitBatchRequest,
  decodeLimitBatchResponse,
  encodeCheckNamedLimitsRequest,
  encodeCheckNamedLimitsResponse,
  encodeLimitBatchRequest,
  encodeLimitBatchResponse,
} from "@latchkey/proto/codecs/ratelimit";

const N = 22; // verifications per batch under load
const caller = { workspaceId: "ws_default", rootKeyId: "rk_3kQpZ8mVtR2xYcA1", permissions: ["*"] };
const req = create(VerifyKeyBatchRequestSchema, {
  callers: [caller],
  items: Array.from({ length: N }, (_, i) => ({
    callerIndex: 0,
    request: {
      key: `lk_${"x".repeat(40)}${i}`,
      permissions: "documents.read AND documents.write",
      requestId: `req_3kQpZ8mVtR2xYc${i}`,
      tags: [],
    },
  })),
});
const res = create(VerifyKeyBatchResponseSchema, {
  results: Array.from({ length: N }, (_, i) => ({
    result: {
      case: "response",
      value: {
        valid: true,
        code: 1,
        keyId: `key_3kQpZ8mVtR2xY${i}`,
        name: "bench",
        expires: undefined,
        credits: 99999n - BigInt(i),
        enabled: true,
        permissions: ["documents.read"],
        roles: ["editor", "viewer"],
        ratelimits: [
          {
            id: "rl_1",
            name: "requests",
            limit: 1000000000n,
            duration: 60000n,
            reset: 1767225660000n,
            remaining: 999999n,
            exceeded: false,
            autoApply: true,
          },
        ],
      },
    },
  })),
});
const cnlReq = create(CheckNamedLimitsRequestSchema, {
  groups: Array.from({ length: N }, (_, i) => ({
    workspaceId: "ws_default",
    limits: [{ owner: `key_3kQpZ8mVtR2xY${i}`, name: "requests", limit: 1000000000n, duration: 60000n }],
  })),
});
const cnlRes = create(CheckNamedLimitsResponseSchema, {
  groups: Array.from({ length: N }, () => ({
    passed: true,
    results: [{ limit: 1000000000n, remaining: 999999n, reset: 1767225660000n, exceeded: false }],
  })),
});

function time(_label: string, per: number, f: () => unknown): number {
  for (let i = 0; i < 2000; i++) f();
  const runs = 5;
  const times: number[] = [];
  for (let r = 0; r < runs; r++) {
    const iters = 3000;
    const t0 = process.cpuUsage();
    for (let i = 0; i < iters; i++) f();
    const d = process.cpuUsage(t0);
    times.push((d.user + d.system) / iters / per);
  }
  times.sort((a, b) => a - b);
  return times[2]!;
}
const rows: [string, number, number][] = [];
const pair = (name: string, per: number, hand: () => unknown, lib: () => unknown) =>
  rows.push([name, time(name, per, lib), time(name, per, hand)]);
const reqBytes = toBinary(VerifyKeyBatchRequestSchema, req);
const resBytes = toBinary(VerifyKeyBatchResponseSchema, res);
pair(
  "VerifyKeyBatch request encode (gateway)",
  N,
  () => encodeVerifyKeyBatchRequest(req),
  () => toBinary(VerifyKeyBatchRequestSchema, req),
);
pair(
  "VerifyKeyBatch request decode (keys)",
  N,
  () => decodeVerifyKeyBatchRequest(reqBytes),
  () => fromBinary(VerifyKeyBatchRequestSchema, reqBytes),
);
pair(
  "VerifyKeyBatch answer decode (gateway)",
  N,
  () => decodeVerifyKeyBatchResponse(resBytes),
  () => fromBinary(VerifyKeyBatchResponseSchema, resBytes),
);
const cnlReqBytes = toBinary(CheckNamedLimitsRequestSchema, cnlReq);
const cnlResBytes = toBinary(CheckNamedLimitsResponseSchema, cnlRes);
pair(
  "CheckNamedLimits request encode (keys)",
  N,
  () => encodeCheckNamedLimitsRequest(cnlReq),
  () => toBinary(CheckNamedLimitsRequestSchema, cnlReq),
);
pair(
  "CheckNamedLimits request decode (ratelimit)",
  N,
  () => decodeCheckNamedLimitsRequest(cnlReqBytes),
  () => fromBinary(CheckNamedLimitsRequestSchema, cnlReqBytes),
);
pair(
  "CheckNamedLimits answer encode (ratelimit)",
  N,
  () => encodeCheckNamedLimitsResponse(cnlRes),
  () => toBinary(CheckNamedLimitsResponseSchema, cnlRes),
);
pair(
  "CheckNamedLimits answer decode (keys)",
  N,
  () => decodeCheckNamedLimitsResponse(cnlResBytes),
  () => fromBinary(CheckNamedLimitsResponseSchema, cnlResBytes),
);
const lbReq = create(LimitBatchRequestSchema, {
  callers: [caller],
  items: Array.from({ length: N }, (_, i) => ({
    callerIndex: 0,
    request: {
      check: { namespace: "bench", identifier: "user_1", limit: 1000000000n, duration: 60000n },
      requestId: `req_3kQpZ8mVtR2xYc${i}`,
    },
  })),
});
const lbRes = create(LimitBatchResponseSchema, {
  results: Array.from({ length: N }, () => ({
    result: {
      case: "response",
      value: {
        result: {
          namespace: "bench",
          identifier: "user_1",
          success: true,
          limit: 1000000000n,
          remaining: 999999n,
          reset: 1767225660000n,
        },
      },
    },
  })),
});
const lbReqBytes = toBinary(LimitBatchRequestSchema, lbReq);
const lbResBytes = toBinary(LimitBatchResponseSchema, lbRes);
pair(
  "LimitBatch request encode (gateway)",
  N,
  () => encodeLimitBatchRequest(lbReq),
  () => toBinary(LimitBatchRequestSchema, lbReq),
);
pair(
  "LimitBatch request decode (ratelimit)",
  N,
  () => decodeLimitBatchRequest(lbReqBytes),
  () => fromBinary(LimitBatchRequestSchema, lbReqBytes),
);
pair(
  "LimitBatch answer encode (ratelimit)",
  N,
  () => encodeLimitBatchResponse(lbRes),
  () => toBinary(LimitBatchResponseSchema, lbRes),
);
pair(
  "LimitBatch answer decode (gateway)",
  N,
  () => decodeLimitBatchResponse(lbResBytes),
  () => fromBinary(LimitBatchResponseSchema, lbResBytes),
);
for (const [name, lib, hand] of rows) {
  process.stdout.write(
    `${name.padEnd(46)} protobuf-es ${lib.toFixed(2)} µs, hand ${hand.toFixed(2)} µs: ${(lib - hand).toFixed(2)} µs less per verification\n`,
  );
}
