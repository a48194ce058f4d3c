import { type KeyVerified, KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { type RatelimitChecked, RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { readOr, WireReader } from "@latchkey/runtime/wire/reader";

/**
 * Hand-written decoders for the two events analytics ingests, one call per
 * event: protobuf-es's reflective fromBinary cost more than the rest of an
 * event's way into the embedded store. They give fromBinary's message, or
 * throw its error, for every input (event-codecs.test.ts compares them): what
 * they do not read by hand (non-ASCII strings, unknown fields, unexpected wire
 * types, truncated input) they hand to fromBinary, for the whole message, as
 * the runtime's ratelimit codecs do.
 */
export function decodeKeyVerified(bytes: Uint8Array): KeyVerified {
  return readOr(KeyVerifiedSchema, bytes, readKeyVerified);
}

export function decodeRatelimitChecked(bytes: Uint8Array): RatelimitChecked {
  return readOr(RatelimitCheckedSchema, bytes, readRatelimitChecked);
}

// Tags: field number × 8 + wire type (0 varint, 1 fixed64, 2 length-delimited).
const T1_LEN = 10;
const T2_VARINT = 16;
const T3_LEN = 26;
const T4_LEN = 34;
const T5_LEN = 42;
const T6_LEN = 50;
const T6_VARINT = 48;
const T7_LEN = 58;
const T7_VARINT = 56;
const T8_LEN = 66;
const T8_VARINT = 64;
const T9_LEN = 74;
const T9_VARINT = 72;
const T10_VARINT = 80;
const T11_FIXED64 = 89;
const T11_LEN = 90;
const T12_FIXED64 = 97;
const T13_VARINT = 104;

/** The hand-written part alone: throws UNHANDLED where the decoder hands over to fromBinary. */
export function readKeyVerified(bytes: Uint8Array): KeyVerified {
  const r = new WireReader(bytes);
  const e: KeyVerified = {
    $typeName: "keys.v1.KeyVerified",
    requestId: "",
    time: 0n,
    workspaceId: "",
    apiId: "",
    keyId: "",
    identityId: "",
    externalId: "",
    outcome: "",
    tags: [],
    spentCredits: 0n,
    latency: 0,
  };
  const end = r.end;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_LEN) e.requestId = r.string(end);
    else if (tag === T2_VARINT) e.time = r.int64();
    else if (tag === T3_LEN) e.workspaceId = r.string(end);
    else if (tag === T4_LEN) e.apiId = r.string(end);
    else if (tag === T5_LEN) e.keyId = r.string(end);
    else if (tag === T6_LEN) e.identityId = r.string(end);
    else if (tag === T7_LEN) e.externalId = r.string(end);
    else if (tag === T8_LEN) e.outcome = r.string(end);
    else if (tag === T9_LEN) e.tags.push(r.string(end));
    else if (tag === T10_VARINT) e.spentCredits = r.int64();
    else if (tag === T11_FIXED64) e.latency = double(r, bytes);
    else r.unhandled();
  }
  return e;
}

/** The hand-written part alone: throws UNHANDLED where the decoder hands over to fromBinary. */
export function readRatelimitChecked(bytes: Uint8Array): RatelimitChecked {
  const r = new WireReader(bytes);
  const e: RatelimitChecked = {
    $typeName: "ratelimit.v1.RatelimitChecked",
    requestId: "",
    time: 0n,
    workspaceId: "",
    namespaceId: "",
    identifier: "",
    passed: false,
    limit: 0n,
    remaining: 0n,
    reset: 0n,
    cost: 0n,
    overrideId: "",
    latency: 0,
    index: 0,
  };
  const end = r.end;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === T1_LEN) e.requestId = r.string(end);
    else if (tag === T2_VARINT) e.time = r.int64();
    else if (tag === T3_LEN) e.workspaceId = r.string(end);
    else if (tag === T4_LEN) e.namespaceId = r.string(end);
    else if (tag === T5_LEN) e.identifier = r.string(end);
    else if (tag === T6_VARINT) e.passed = r.bool();
    else if (tag === T7_VARINT) e.limit = r.int64();
    else if (tag === T8_VARINT) e.remaining = r.int64();
    else if (tag === T9_VARINT) e.reset = r.int64();
    else if (tag === T10_VARINT) e.cost = r.int64();
    else if (tag === T11_LEN) e.overrideId = r.string(end);
    else if (tag === T12_FIXED64) e.latency = double(r, bytes);
    else if (tag === T13_VARINT) e.index = r.uint32();
    else r.unhandled();
  }
  return e;
}

/** Eight bytes copied out, so one DataView serves every message whatever its buffer and offset. */
const scratch = new DataView(new ArrayBuffer(8));

/** A double (fixed64, little-endian) at the reader's position. */
function double(r: WireReader, bytes: Uint8Array): number {
  const at = r.pos;
  if (at + 8 > r.end) r.unhandled();
  for (let i = 0; i < 8; i++) scratch.setUint8(i, bytes[at + i]!);
  r.pos = at + 8;
  return scratch.getFloat64(0, true);
}
