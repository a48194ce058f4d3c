import { toBinary } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import type { HandlerContext } from "@connectrpc/connect";
import { WireWriter } from "@latchkey/proto/codecs/wire/writer";
import {
  KeyIdentitySchema,
  VerifyKeyBatchResultSchema as ResultSchema,
  type VerifyKeyBatchResponse,
  type VerifyKeyBatchResult,
  type VerifyKeyResponse,
} from "@latchkey/proto/keys/v1/keys_pb";

/**
 * VerifyKeyBatch's answer written by hand, for servers that serialise it to
 * binary protobuf. protobuf-es encodes by reflection, a field lookup and a
 * string conversion per field, which costs more than verifying the key does
 * (measured in docs/architecture.md, Codecs). Here the fields of a verification that come
 * from the cached key, its grants and its identity (key id, name, meta,
 * expires, enabled, permissions, roles, identity) are encoded once per cached
 * key (Segments) and copied; the rest is written field by field with the
 * contract's one writer (proto/codecs/wire/writer.ts).
 *
 * How it crosses Connect without touching its serialisation (as the gateway's
 * wire.ts does for its requests): the answer is a VerifyKeyBatchResponse
 * whose results are unknown fields, already encoded; protobuf-es writes
 * unknown fields as they are, so the bytes on the wire are exactly those of
 * the results encoded by protobuf-es (batch-wire.test.ts holds them equal).
 * Only where the answer is written as binary (answersInBinary): in process
 * (localTransport) and over JSON the results are ordinary messages.
 */

/** A verification's fields from its cached key, grants and identity, encoded in field order around credits (7). */
export interface Segments {
  /** key_id, name, meta_json, expires (fields 3 to 6). */
  before: Uint8Array;
  /** enabled, permissions, roles, identity (fields 8 to 11). */
  after: Uint8Array;
}

/** Content types of binary protobuf: Connect, gRPC and gRPC-Web. */
const BINARY = /^application\/(proto|grpc(-web)?(\+proto)?)(;|$)/;

/** Whether this call's answer will be serialised as binary protobuf (so its results may be pre-encoded). */
export function answersInBinary(ctx: HandlerContext | undefined): boolean {
  if (ctx === undefined || ctx.protocolName === "local") return false;
  const type = ctx.requestHeader.get("content-type");
  // The runtime's unary fast path serves only binary Connect calls and hands no request headers over.
  if (type === null) return ctx.protocolName === "connect";
  return BINARY.test(type);
}

/** The segments of a verification's answer, from its fields. */
export function segmentsOf(r: VerifyKeyResponse): Segments {
  const w = new WireWriter();
  w.optionalString(3, r.keyId).optionalString(4, r.name).optionalString(5, r.metaJson);
  // Copied into buffers of their own: kept with the cached key, a slice of Node's shared pool would keep the pool.
  const before = new Uint8Array(w.optionalBigint64(6, r.expires).finish());
  w.optionalBool(8, r.enabled);
  for (const p of r.permissions) w.optionalString(9, p);
  for (const role of r.roles) w.optionalString(10, role);
  if (r.identity !== undefined) w.message(11, toBinary(KeyIdentitySchema, r.identity));
  return { before, after: new Uint8Array(w.finish()) };
}

// One writer per process: an answer is written synchronously and copied out by finish().
const writer = new WireWriter(4096);

/**
 * The batch's answer with its results pre-encoded. `segments` gives the
 * cached segments of a result (VerificationMemos keeps them per cached key); a
 * result without is encoded from its fields, and an error by protobuf-es.
 */
export function encodedAnswer(
  results: readonly VerifyKeyBatchResult[],
  /** The segments of result `index`'s answer, when they are kept. */
  segments: (index: number, response: VerifyKeyResponse) => Segments | undefined,
): VerifyKeyBatchResponse {
  if (results.length === 0) return { $typeName: "keys.v1.VerifyKeyBatchResponse", results: [] };
  const w = writer;
  w.reset();
  results.forEach((result, index) => {
    const r = result.result;
    // Each result is field 1 (results) of VerifyKeyBatchResponse, holding its response as its field 1.
    if (r.case === "response" && result.$unknown === undefined && !hasUnknown(r.value)) {
      w.fork(1).fork(1);
      writeResponse(w, r.value, segments(index, r.value) ?? segmentsOf(r.value));
      w.join().join();
    } else w.message(1, toBinary(ResultSchema, result));
  });
  // protobuf-es writes an unknown field as its tag and then its data as they are: every result in one
  // entry, the first one's one-byte tag (field 1, length-delimited) as the entry's, the rest as its data.
  const data = w.finish().subarray(1);
  return {
    $typeName: "keys.v1.VerifyKeyBatchResponse",
    results: [],
    $unknown: [{ no: 1, wireType: WireType.LengthDelimited, data }],
  };
}

/** Unknown fields (never in the service's own answers) are left to toBinary, which writes them. */
function hasUnknown(r: VerifyKeyResponse): boolean {
  return r.$unknown !== undefined || r.ratelimits.some((l) => l.$unknown !== undefined);
}

function writeResponse(w: WireWriter, r: VerifyKeyResponse, s: Segments): void {
  w.bool(1, r.valid).int64(2, r.code).raw(s.before).optionalBigint64(7, r.credits).raw(s.after);
  for (const l of r.ratelimits) {
    w.fork(12)
      .string(1, l.id)
      .string(2, l.name)
      .bigint64(3, l.limit)
      .bigint64(4, l.duration)
      .bigint64(5, l.reset)
      .bigint64(6, l.remaining)
      .bool(7, l.exceeded)
      .bool(8, l.autoApply)
      .join();
  }
}
