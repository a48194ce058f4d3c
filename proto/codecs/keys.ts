import type { Caller, RatelimitConfig } from "../gen/common/v1/common_pb.ts";
import {
  type KeyIdentity,
  type VerifyKeyBatchItem,
  type VerifyKeyBatchRequest,
  VerifyKeyBatchRequestSchema,
  type VerifyKeyBatchResponse,
  VerifyKeyBatchResponseSchema,
  type VerifyKeyBatchResult,
  type VerifyKeyRequest,
  type VerifyKeyResponse,
  type VerifyRatelimitRequest,
  type VerifyRatelimitResult,
} from "../gen/keys/v1/keys_pb.ts";
import type { WireCodecs } from "./wire/codec.ts";
import { readCaller, readOr, UNHANDLED, WireReader } from "./wire/reader.ts";
import { writeCaller, writeOr } from "./wire/writer.ts";

/**
 * VerifyKeyBatch, the batched call of every verification, written and read by
 * hand: the gateway encodes the request and decodes the answer, the keys
 * service decodes the request (and pre-encodes its answer: batch-wire.ts).
 * protobuf-es encodes and decodes by reflection, a field lookup and a string
 * conversion per field, which cost more per item than judging a cached key.
 * Same messages and bytes as fromBinary and toBinary for every input
 * (test/in-memory/fast-codecs.test.ts checks them on random messages and on
 * malformed input): what these do not handle (an item's error, unknown fields,
 * invalid UTF-8, a negative code) they hand to protobuf-es, for the whole
 * message. Built on the contract's one reader and writer (wire/). It is part of
 * the contract, not of the keys service, because both ends of the call use it.
 */
export const verifyKeyBatchCodecs: WireCodecs = {
  "/keys.v1.KeysService/VerifyKeyBatch": {
    decodeRequest: decodeVerifyKeyBatchRequest,
    encodeRequest: encodeVerifyKeyBatchRequest,
    decodeResponse: decodeVerifyKeyBatchResponse,
  },
};

// Tags: field number × 8 + wire type (0 varint, 2 length-delimited).
const T1_LEN = 10;
const T2_LEN = 18;
const T3_LEN = 26;
const T4_LEN = 34;
const T5_LEN = 42;
const T6_LEN = 50;
const T7_LEN = 58;
const T8_LEN = 66;
const T1_VARINT = 8;
const T2_VARINT = 16;
const T3_VARINT = 24;
const T4_VARINT = 32;
const T5_VARINT = 40;
const T6_VARINT = 48;
const T7_VARINT = 56;
const T8_VARINT = 64;
const T9_LEN = 74;
const T10_LEN = 82;
const T11_LEN = 90;
const T12_LEN = 98;

export function decodeVerifyKeyBatchRequest(bytes: Uint8Array): VerifyKeyBatchRequest {
  return readOr(VerifyKeyBatchRequestSchema, bytes, readVerifyKeyBatchRequest);
}

/** The hand-written part alone: throws UNHANDLED where the decoder hands over to fromBinary. */
export function readVerifyKeyBatchRequest(bytes: Uint8Array): VerifyKeyBatchRequest {
  const r = new WireReader(bytes);
  const callers: Caller[] = [];
  const items: VerifyKeyBatchItem[] = [];
  while (r.pos < r.end) {
    const tag = r.uint32();
    if (tag === T1_LEN) callers.push(readCaller(r, r.delimited(r.end)));
    else if (tag === T2_LEN) items.push(readItem(r, r.delimited(r.end)));
    else r.unhandled();
  }
  return { $typeName: "keys.v1.VerifyKeyBatchRequest", callers, items };
}

function readItem(r: WireReader, end: number): VerifyKeyBatchItem {
  const item: VerifyKeyBatchItem = { $typeName: "keys.v1.VerifyKeyBatchItem", callerIndex: 0 };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_VARINT) item.callerIndex = r.uint32();
    // A message field seen twice is merged by fromBinary: left to it.
    else if (tag === T2_LEN && item.request === undefined) item.request = readRequest(r, r.delimited(end));
    else r.unhandled();
  }
  r.close(end);
  return item;
}

function readRequest(r: WireReader, end: number): VerifyKeyRequest {
  const req: VerifyKeyRequest = {
    $typeName: "keys.v1.VerifyKeyRequest",
    key: "",
    tags: [],
    ratelimits: [],
    requestId: "",
  };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_LEN && req.caller === undefined) req.caller = readCaller(r, r.delimited(end));
    else if (tag === T2_LEN) req.key = r.string(end);
    else if (tag === T3_VARINT) req.cost = r.int64();
    else if (tag === T4_LEN) req.tags.push(r.string(end));
    else if (tag === T5_LEN) req.ratelimits.push(readRatelimit(r, r.delimited(end)));
    else if (tag === T6_LEN) req.permissions = r.string(end);
    else if (tag === T7_LEN) req.migrationId = r.string(end);
    else if (tag === T8_LEN) req.requestId = r.string(end);
    else if (tag === T9_LEN) req.clientIp = r.string(end);
    else r.unhandled();
  }
  r.close(end);
  return req;
}

function readRatelimit(r: WireReader, end: number): VerifyRatelimitRequest {
  const limit: VerifyRatelimitRequest = { $typeName: "keys.v1.VerifyRatelimitRequest", name: "" };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_LEN) limit.name = r.string(end);
    else if (tag === T2_VARINT) limit.cost = r.int64();
    else if (tag === T3_VARINT) limit.limit = r.int64();
    else if (tag === T4_VARINT) limit.duration = r.int64();
    else r.unhandled();
  }
  r.close(end);
  return limit;
}

export function encodeVerifyKeyBatchRequest(req: VerifyKeyBatchRequest): Uint8Array {
  return writeOr(VerifyKeyBatchRequestSchema, req, (w) => {
    if (req.$unknown !== undefined) throw UNHANDLED;
    for (const caller of req.callers) writeCaller(w.fork(1), caller).join();
    for (const item of req.items) {
      if (item.$unknown !== undefined) throw UNHANDLED;
      w.fork(2).int64(1, item.callerIndex);
      const r = item.request;
      if (r !== undefined) {
        if (r.$unknown !== undefined) throw UNHANDLED;
        w.fork(2);
        if (r.caller !== undefined) writeCaller(w.fork(1), r.caller).join();
        w.string(2, r.key).optionalBigint64(3, r.cost);
        for (const tag of r.tags) w.optionalString(4, tag);
        for (const l of r.ratelimits) {
          if (l.$unknown !== undefined) throw UNHANDLED;
          w.fork(5)
            .string(1, l.name)
            .optionalBigint64(2, l.cost)
            .optionalBigint64(3, l.limit)
            .optionalBigint64(4, l.duration)
            .join();
        }
        w.optionalString(6, r.permissions)
          .optionalString(7, r.migrationId)
          .string(8, r.requestId)
          .optionalString(9, r.clientIp)
          .join();
      }
      w.join();
    }
  });
}

export function decodeVerifyKeyBatchResponse(bytes: Uint8Array): VerifyKeyBatchResponse {
  return readOr(VerifyKeyBatchResponseSchema, bytes, readVerifyKeyBatchResponse);
}

/** The hand-written part alone: throws UNHANDLED where the decoder hands over to fromBinary (e.g. an item's error). */
export function readVerifyKeyBatchResponse(bytes: Uint8Array): VerifyKeyBatchResponse {
  const r = new WireReader(bytes);
  const results: VerifyKeyBatchResult[] = [];
  while (r.pos < r.end) {
    if (r.uint32() !== T1_LEN) r.unhandled();
    const end = r.delimited(r.end);
    const result: VerifyKeyBatchResult = {
      $typeName: "keys.v1.VerifyKeyBatchResult",
      result: { case: undefined },
    };
    while (r.pos < end) {
      // One answer per item: a second one, or an error, is left to fromBinary.
      if (r.uint32() !== T1_LEN || result.result.case !== undefined) r.unhandled();
      result.result = { case: "response", value: readResponse(r, r.delimited(end)) };
    }
    r.close(end);
    results.push(result);
  }
  return { $typeName: "keys.v1.VerifyKeyBatchResponse", results };
}

function readResponse(r: WireReader, end: number): VerifyKeyResponse {
  const m: VerifyKeyResponse = {
    $typeName: "keys.v1.VerifyKeyResponse",
    valid: false,
    code: 0,
    permissions: [],
    roles: [],
    ratelimits: [],
  };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_VARINT) m.valid = r.bool();
    // An enum: a negative one takes ten bytes, more than uint32 reads (left to fromBinary).
    else if (tag === T2_VARINT) m.code = int32(r);
    else if (tag === T3_LEN) m.keyId = r.string(end);
    else if (tag === T4_LEN) m.name = r.string(end);
    else if (tag === T5_LEN) m.metaJson = r.string(end);
    else if (tag === T6_VARINT) m.expires = r.int64();
    else if (tag === T7_VARINT) m.credits = r.int64();
    else if (tag === T8_VARINT) m.enabled = r.bool();
    else if (tag === T9_LEN) m.permissions.push(r.string(end));
    else if (tag === T10_LEN) m.roles.push(r.string(end));
    else if (tag === T11_LEN && m.identity === undefined) m.identity = readIdentity(r, r.delimited(end));
    else if (tag === T12_LEN) m.ratelimits.push(readRatelimitResult(r, r.delimited(end)));
    else r.unhandled();
  }
  r.close(end);
  return m;
}

/** An int32 or enum that fits 31 bits; anything else is left to fromBinary. */
function int32(r: WireReader): number {
  const v = r.uint32();
  return v > 0x7fffffff ? r.unhandled() : v;
}

function readRatelimitResult(r: WireReader, end: number): VerifyRatelimitResult {
  const m: VerifyRatelimitResult = {
    $typeName: "keys.v1.VerifyRatelimitResult",
    id: "",
    name: "",
    limit: 0n,
    duration: 0n,
    reset: 0n,
    remaining: 0n,
    exceeded: false,
    autoApply: false,
  };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_LEN) m.id = r.string(end);
    else if (tag === T2_LEN) m.name = r.string(end);
    else if (tag === T3_VARINT) m.limit = r.int64();
    else if (tag === T4_VARINT) m.duration = r.int64();
    else if (tag === T5_VARINT) m.reset = r.int64();
    else if (tag === T6_VARINT) m.remaining = r.int64();
    else if (tag === T7_VARINT) m.exceeded = r.bool();
    else if (tag === T8_VARINT) m.autoApply = r.bool();
    else r.unhandled();
  }
  r.close(end);
  return m;
}

function readIdentity(r: WireReader, end: number): KeyIdentity {
  const m: KeyIdentity = { $typeName: "keys.v1.KeyIdentity", id: "", externalId: "", ratelimits: [] };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_LEN) m.id = r.string(end);
    else if (tag === T2_LEN) m.externalId = r.string(end);
    else if (tag === T3_LEN) m.metaJson = r.string(end);
    else if (tag === T4_LEN) m.ratelimits.push(readRatelimitConfig(r, r.delimited(end)));
    else r.unhandled();
  }
  r.close(end);
  return m;
}

function readRatelimitConfig(r: WireReader, end: number): RatelimitConfig {
  const m: RatelimitConfig = {
    $typeName: "common.v1.RatelimitConfig",
    id: "",
    name: "",
    limit: 0n,
    duration: 0n,
    autoApply: false,
  };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_LEN) m.id = r.string(end);
    else if (tag === T2_LEN) m.name = r.string(end);
    else if (tag === T3_VARINT) m.limit = r.int64();
    else if (tag === T4_VARINT) m.duration = r.int64();
    else if (tag === T5_VARINT) m.autoApply = r.bool();
    else r.unhandled();
  }
  r.close(end);
  return m;
}
