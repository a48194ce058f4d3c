import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import {
  type VerifyKeyBatchItem,
  type VerifyKeyBatchRequest,
  VerifyKeyBatchRequestSchema,
  type VerifyKeyRequest,
  type VerifyRatelimitRequest,
} from "@latchkey/proto/keys/v1/keys_pb";
import type { WireCodecs } from "../unary.ts";
import { readCaller, readOr, WireReader } from "./reader.ts";

/**
 * The keys service's side of VerifyKeyBatch, the batched call of every
 * verification: its request decoded by hand (protobuf-es's reflective
 * fromBinary was ~5 % of the keys service's CPU under load). Same message as
 * fromBinary for every input, or fromBinary's own answer where this hands over
 * (keys-codecs.test.ts compares them, malformed input included), as the
 * ratelimit codecs do. The answer is pre-encoded by the service itself
 * (services/keys batch-wire.ts) and the gateway encodes the request (its
 * wire.ts).
 */
export const keysCodecs: WireCodecs = {
  "/keys.v1.KeysService/VerifyKeyBatch": { decodeRequest: decodeVerifyKeyBatchRequest },
};

// Tags: field number × 8 + wire type (0 varint, 2 length-delimited).
const T1_LEN = 10;
const T2_LEN = 18;
const T4_LEN = 34;
const T5_LEN = 42;
const T6_LEN = 50;
const T7_LEN = 58;
const T8_LEN = 66;
const T1_VARINT = 8;
const T2_VARINT = 16;
const T3_VARINT = 24;
const T4_VARINT = 32;

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
