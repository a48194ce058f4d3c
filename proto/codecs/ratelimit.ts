import { toBinary } from "@bufbuild/protobuf";
import type { Caller } from "../gen/common/v1/common_pb.ts";
import {
  type CheckNamedLimitsRequest,
  CheckNamedLimitsRequestSchema,
  type CheckNamedLimitsResponse,
  CheckNamedLimitsResponseSchema,
  type LimitBatchItem,
  type LimitBatchRequest,
  LimitBatchRequestSchema,
  type LimitBatchResponse,
  LimitBatchResponseSchema,
  type LimitBatchResult,
  LimitBatchResultSchema,
  type LimitCheck,
  type LimitRequest,
  type LimitResponse,
  type LimitResult,
  type NamedLimit,
  type NamedLimitGroup,
  type NamedLimitGroupResult,
  type NamedLimitResult,
} from "../gen/ratelimit/v1/ratelimit_pb.ts";
import { readCaller, readOr, UNHANDLED, WireReader } from "./wire/reader.ts";
import { type WireWriter, writeCaller, writeOr } from "./wire/writer.ts";

/**
 * Hand-written codecs for the two RPCs called once per batch of requests,
 * CheckNamedLimits (keys, per verification batch) and LimitBatch (gateway,
 * per ratelimits.limit batch), both ends: the server decodes the request and
 * encodes the answer, the client the other way round. protobuf-es decodes and
 * encodes by reflection, and in the served RPC that costs more per item than
 * counting the item (services/ratelimit/bench/check-named-limits.ts prints both).
 * These give the same messages and the same bytes as fromBinary and toBinary
 * (test/in-memory/fast-codecs.test.ts checks them on random messages and on
 * malformed input): what they do not handle they hand to
 * protobuf-es, for the whole message, so nothing differs but the speed. Built on
 * the contract's one reader and writer (proto/codecs/wire/).
 *
 * Keyed by Connect path, as serveRpc and internalTransport take them
 * (WireCodecs): the ratelimit service serves with them, the keys service and
 * the gateway call it with them: that is why they are the contract's, not the
 * service's.
 */
export interface UnaryCodec<I, O> {
  decodeRequest(bytes: Uint8Array): I;
  encodeResponse(message: O): Uint8Array;
  encodeRequest(message: I): Uint8Array;
  decodeResponse(bytes: Uint8Array): O;
}

export const ratelimitCodecs = {
  "/ratelimit.v1.RatelimitService/CheckNamedLimits": {
    decodeRequest: decodeCheckNamedLimitsRequest,
    encodeResponse: encodeCheckNamedLimitsResponse,
    encodeRequest: encodeCheckNamedLimitsRequest,
    decodeResponse: decodeCheckNamedLimitsResponse,
  } satisfies UnaryCodec<CheckNamedLimitsRequest, CheckNamedLimitsResponse>,
  "/ratelimit.v1.RatelimitService/LimitBatch": {
    decodeRequest: decodeLimitBatchRequest,
    encodeResponse: encodeLimitBatchResponse,
    encodeRequest: encodeLimitBatchRequest,
    decodeResponse: decodeLimitBatchResponse,
  } satisfies UnaryCodec<LimitBatchRequest, LimitBatchResponse>,
};

// Tags: field number × 8 + wire type (0 varint, 2 length-delimited).
const T1_LEN = 10;
const T2_LEN = 18;
const T3_LEN = 26;
const T1_VARINT = 8;
const T3_VARINT = 24;
const T4_VARINT = 32;
const T5_VARINT = 40;
const T7_LEN = 58;
const T2_VARINT = 16;
const T6_VARINT = 48;

export function decodeCheckNamedLimitsRequest(bytes: Uint8Array): CheckNamedLimitsRequest {
  return readOr(CheckNamedLimitsRequestSchema, bytes, readCheckNamedLimitsRequest);
}

/** The hand-written part alone: throws UNHANDLED where the decoder hands over to fromBinary. */
export function readCheckNamedLimitsRequest(bytes: Uint8Array): CheckNamedLimitsRequest {
  const r = new WireReader(bytes);
  const groups: NamedLimitGroup[] = [];
  while (r.pos < r.end) {
    if (r.uint32() !== T1_LEN) r.unhandled();
    groups.push(readNamedLimitGroup(r, r.delimited(r.end)));
  }
  return { $typeName: "ratelimit.v1.CheckNamedLimitsRequest", groups };
}

function readNamedLimitGroup(r: WireReader, end: number): NamedLimitGroup {
  const group: NamedLimitGroup = { $typeName: "ratelimit.v1.NamedLimitGroup", workspaceId: "", limits: [] };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_LEN) group.workspaceId = r.string(end);
    else if (tag === T2_LEN) group.limits.push(readNamedLimit(r, r.delimited(end)));
    else r.unhandled();
  }
  r.close(end);
  return group;
}

function readNamedLimit(r: WireReader, end: number): NamedLimit {
  const limit: NamedLimit = {
    $typeName: "ratelimit.v1.NamedLimit",
    owner: "",
    name: "",
    limit: 0n,
    duration: 0n,
  };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_LEN) limit.owner = r.string(end);
    else if (tag === T2_LEN) limit.name = r.string(end);
    else if (tag === T3_VARINT) limit.limit = r.int64();
    else if (tag === T4_VARINT) limit.duration = r.int64();
    else if (tag === T5_VARINT) limit.cost = r.int64();
    else r.unhandled();
  }
  r.close(end);
  return limit;
}

export function decodeLimitBatchRequest(bytes: Uint8Array): LimitBatchRequest {
  return readOr(LimitBatchRequestSchema, bytes, readLimitBatchRequest);
}

/** The hand-written part alone: throws UNHANDLED where the decoder hands over to fromBinary. */
export function readLimitBatchRequest(bytes: Uint8Array): LimitBatchRequest {
  const r = new WireReader(bytes);
  const callers: Caller[] = [];
  const items: LimitBatchItem[] = [];
  while (r.pos < r.end) {
    const tag = r.uint32();
    if (tag === T1_LEN) callers.push(readCaller(r, r.delimited(r.end)));
    else if (tag === T2_LEN) items.push(readLimitBatchItem(r, r.delimited(r.end)));
    else r.unhandled();
  }
  return { $typeName: "ratelimit.v1.LimitBatchRequest", callers, items };
}

function readLimitBatchItem(r: WireReader, end: number): LimitBatchItem {
  const item: LimitBatchItem = { $typeName: "ratelimit.v1.LimitBatchItem", callerIndex: 0 };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_VARINT) item.callerIndex = r.uint32();
    // A message field seen twice is merged by fromBinary: left to it.
    else if (tag === T2_LEN && item.request === undefined)
      item.request = readLimitRequest(r, r.delimited(end));
    else r.unhandled();
  }
  r.close(end);
  return item;
}

function readLimitRequest(r: WireReader, end: number): LimitRequest {
  const req: LimitRequest = { $typeName: "ratelimit.v1.LimitRequest", requestId: "" };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_LEN && req.caller === undefined) req.caller = readCaller(r, r.delimited(end));
    else if (tag === T2_LEN && req.check === undefined) req.check = readLimitCheck(r, r.delimited(end));
    else if (tag === T3_LEN) req.requestId = r.string(end);
    else if (tag === T4_VARINT) req.metricsDisabled = r.bool();
    else r.unhandled();
  }
  r.close(end);
  return req;
}

function readLimitCheck(r: WireReader, end: number): LimitCheck {
  const check: LimitCheck = {
    $typeName: "ratelimit.v1.LimitCheck",
    namespace: "",
    identifier: "",
    limit: 0n,
    duration: 0n,
  };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_LEN) check.namespace = r.string(end);
    else if (tag === T2_LEN) check.identifier = r.string(end);
    else if (tag === T3_VARINT) check.limit = r.int64();
    else if (tag === T4_VARINT) check.duration = r.int64();
    else if (tag === T5_VARINT) check.cost = r.int64();
    else r.unhandled();
  }
  r.close(end);
  return check;
}

export function encodeCheckNamedLimitsResponse(res: CheckNamedLimitsResponse): Uint8Array {
  return writeOr(CheckNamedLimitsResponseSchema, res, (w) => {
    if (res.$unknown !== undefined) throw UNHANDLED;
    for (const group of res.groups) {
      if (group.$unknown !== undefined) throw UNHANDLED;
      w.fork(1).bool(1, group.passed);
      for (const r of group.results) {
        if (r.$unknown !== undefined) throw UNHANDLED;
        w.fork(2)
          .bigint64(1, r.limit)
          .bigint64(2, r.remaining)
          .bigint64(3, r.reset)
          .bool(4, r.exceeded)
          .join();
      }
      w.join();
    }
  });
}

export function encodeLimitBatchResponse(res: LimitBatchResponse): Uint8Array {
  return writeOr(LimitBatchResponseSchema, res, (w) => {
    if (res.$unknown !== undefined) throw UNHANDLED;
    for (const item of res.results) {
      const result = item.result;
      if (item.$unknown !== undefined || result.case !== "response") {
        // Errors and empty items are rare: toBinary writes them.
        w.message(1, toBinary(LimitBatchResultSchema, item));
        continue;
      }
      const response = result.value;
      if (response.$unknown !== undefined) throw UNHANDLED;
      w.fork(1).fork(1);
      if (response.result !== undefined) writeLimitResult(w.fork(1), response.result).join();
      w.join().join();
    }
  });
}

function writeLimitResult(w: WireWriter, r: LimitResult): WireWriter {
  if (r.$unknown !== undefined) throw UNHANDLED;
  return w
    .string(1, r.namespace)
    .string(2, r.identifier)
    .bool(3, r.success)
    .bigint64(4, r.limit)
    .bigint64(5, r.remaining)
    .bigint64(6, r.reset)
    .optionalString(7, r.overrideId);
}

// The client's side: the keys service and the gateway encode the requests and decode the answers.

export function encodeCheckNamedLimitsRequest(req: CheckNamedLimitsRequest): Uint8Array {
  return writeOr(CheckNamedLimitsRequestSchema, req, (w) => {
    if (req.$unknown !== undefined) throw UNHANDLED;
    for (const group of req.groups) {
      if (group.$unknown !== undefined) throw UNHANDLED;
      w.fork(1).string(1, group.workspaceId);
      for (const l of group.limits) {
        if (l.$unknown !== undefined) throw UNHANDLED;
        w.fork(2)
          .string(1, l.owner)
          .string(2, l.name)
          .bigint64(3, l.limit)
          .bigint64(4, l.duration)
          .optionalBigint64(5, l.cost)
          .join();
      }
      w.join();
    }
  });
}

export function decodeCheckNamedLimitsResponse(bytes: Uint8Array): CheckNamedLimitsResponse {
  return readOr(CheckNamedLimitsResponseSchema, bytes, readCheckNamedLimitsResponse);
}

/** The hand-written part alone: throws UNHANDLED where the decoder hands over to fromBinary. */
export function readCheckNamedLimitsResponse(bytes: Uint8Array): CheckNamedLimitsResponse {
  const r = new WireReader(bytes);
  const groups: NamedLimitGroupResult[] = [];
  while (r.pos < r.end) {
    if (r.uint32() !== T1_LEN) r.unhandled();
    const end = r.delimited(r.end);
    const group: NamedLimitGroupResult = {
      $typeName: "ratelimit.v1.NamedLimitGroupResult",
      passed: false,
      results: [],
    };
    while (r.pos < end) {
      const tag = r.uint32();
      if (tag === T1_VARINT) group.passed = r.bool();
      else if (tag === T2_LEN) group.results.push(readNamedLimitResult(r, r.delimited(end)));
      else r.unhandled();
    }
    r.close(end);
    groups.push(group);
  }
  return { $typeName: "ratelimit.v1.CheckNamedLimitsResponse", groups };
}

function readNamedLimitResult(r: WireReader, end: number): NamedLimitResult {
  const result: NamedLimitResult = {
    $typeName: "ratelimit.v1.NamedLimitResult",
    limit: 0n,
    remaining: 0n,
    reset: 0n,
    exceeded: false,
  };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_VARINT) result.limit = r.int64();
    else if (tag === T2_VARINT) result.remaining = r.int64();
    else if (tag === T3_VARINT) result.reset = r.int64();
    else if (tag === T4_VARINT) result.exceeded = r.bool();
    else r.unhandled();
  }
  r.close(end);
  return result;
}

export function encodeLimitBatchRequest(req: LimitBatchRequest): Uint8Array {
  return writeOr(LimitBatchRequestSchema, req, (w) => {
    if (req.$unknown !== undefined) throw UNHANDLED;
    for (const caller of req.callers) writeCaller(w.fork(1), caller).join();
    for (const item of req.items) {
      if (item.$unknown !== undefined) throw UNHANDLED;
      w.fork(2).int64(1, item.callerIndex);
      const request = item.request;
      if (request !== undefined) {
        if (request.$unknown !== undefined) throw UNHANDLED;
        w.fork(2);
        if (request.caller !== undefined) writeCaller(w.fork(1), request.caller).join();
        const check = request.check;
        if (check !== undefined) {
          if (check.$unknown !== undefined) throw UNHANDLED;
          w.fork(2)
            .string(1, check.namespace)
            .string(2, check.identifier)
            .bigint64(3, check.limit)
            .bigint64(4, check.duration)
            .optionalBigint64(5, check.cost)
            .join();
        }
        w.string(3, request.requestId).optionalBool(4, request.metricsDisabled).join();
      }
      w.join();
    }
  });
}

export function decodeLimitBatchResponse(bytes: Uint8Array): LimitBatchResponse {
  return readOr(LimitBatchResponseSchema, bytes, readLimitBatchResponse);
}

/**
 * The hand-written part alone: throws UNHANDLED where the decoder hands over
 * to fromBinary, e.g. at an item's error (rare, and its detail nests deeper).
 */
export function readLimitBatchResponse(bytes: Uint8Array): LimitBatchResponse {
  const r = new WireReader(bytes);
  const results: LimitBatchResult[] = [];
  while (r.pos < r.end) {
    if (r.uint32() !== T1_LEN) r.unhandled();
    const end = r.delimited(r.end);
    const item: LimitBatchResult = {
      $typeName: "ratelimit.v1.LimitBatchResult",
      result: { case: undefined },
    };
    while (r.pos < end) {
      // One answer per item: a second one (or an error) is left to fromBinary.
      if (r.uint32() !== T1_LEN || item.result.case !== undefined) r.unhandled();
      item.result = { case: "response", value: readLimitResponse(r, r.delimited(end)) };
    }
    r.close(end);
    results.push(item);
  }
  return { $typeName: "ratelimit.v1.LimitBatchResponse", results };
}

function readLimitResponse(r: WireReader, end: number): LimitResponse {
  const response: LimitResponse = { $typeName: "ratelimit.v1.LimitResponse" };
  while (r.pos < end) {
    if (r.uint32() !== T1_LEN || response.result !== undefined) r.unhandled();
    const resultEnd = r.delimited(end);
    const result: LimitResult = {
      $typeName: "ratelimit.v1.LimitResult",
      namespace: "",
      identifier: "",
      success: false,
      limit: 0n,
      remaining: 0n,
      reset: 0n,
    };
    while (r.pos < resultEnd) {
      const tag = r.uint32();
      if (tag === T1_LEN) result.namespace = r.string(resultEnd);
      else if (tag === T2_LEN) result.identifier = r.string(resultEnd);
      else if (tag === T3_VARINT) result.success = r.bool();
      else if (tag === T4_VARINT) result.limit = r.int64();
      else if (tag === T5_VARINT) result.remaining = r.int64();
      else if (tag === T6_VARINT) result.reset = r.int64();
      else if (tag === T7_LEN) result.overrideId = r.string(resultEnd);
      else r.unhandled();
    }
    r.close(resultEnd);
    response.result = result;
  }
  r.close(end);
  return response;
}
