import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import type { HandlerContext } from "@connectrpc/connect";
import {
  KeyIdentitySchema,
  VerifyKeyBatchResultSchema as ResultSchema,
  type VerifyKeyBatchResponse,
  type VerifyKeyBatchResultSchema,
  type VerifyKeyResponseSchema,
} from "@latchkey/proto/keys/v1/keys_pb";

/**
 * VerifyKeyBatch's answer written by hand, for servers that serialise it to
 * binary protobuf. protobuf-es encodes by reflection, a field lookup and a
 * string conversion per field: about 6 µs per verification for ~140 bytes,
 * twice what verifying it costs. Here the fields of a verification that come
 * from the cached key, its grants and its identity (key id, name, meta,
 * expires, enabled, permissions, roles, identity) are encoded once per cached
 * key (Segments) and copied; the rest is written field by field.
 *
 * How it crosses Connect without touching its serialisation (as the gateway's
 * wire.ts does for its requests): the answer is a VerifyKeyBatchResponse
 * whose results are unknown fields, already encoded; protobuf-es writes
 * unknown fields as they are, so the bytes on the wire are exactly those of
 * the results encoded by protobuf-es (batch-wire.test.ts holds them equal).
 * Only where the answer is written as binary (answersInBinary): in process
 * (localTransport) and over JSON the results are ordinary messages.
 */

type VerifyKeyResult = MessageInitShape<typeof VerifyKeyResponseSchema>;
type BatchResult = MessageInitShape<typeof VerifyKeyBatchResultSchema>;

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
export function segmentsOf(r: VerifyKeyResult): Segments {
  const before = new BinaryWriter();
  if (r.keyId !== undefined) before.tag(3, WireType.LengthDelimited).string(r.keyId);
  if (r.name !== undefined) before.tag(4, WireType.LengthDelimited).string(r.name);
  if (r.metaJson !== undefined) before.tag(5, WireType.LengthDelimited).string(r.metaJson);
  if (r.expires !== undefined) before.tag(6, WireType.Varint).int64(r.expires);
  const after = new BinaryWriter();
  if (r.enabled !== undefined) after.tag(8, WireType.Varint).bool(r.enabled);
  for (const p of r.permissions ?? []) after.tag(9, WireType.LengthDelimited).string(p);
  for (const role of r.roles ?? []) after.tag(10, WireType.LengthDelimited).string(role);
  if (r.identity !== undefined) {
    after
      .tag(11, WireType.LengthDelimited)
      .bytes(toBinary(KeyIdentitySchema, create(KeyIdentitySchema, r.identity)));
  }
  return { before: before.finish(), after: after.finish() };
}

/**
 * The batch's answer with its results pre-encoded. `segments` gives the
 * cached segments of a result (verifyKey.ts keeps them per cached key); a
 * result without, or an error, is encoded by protobuf-es.
 */
export function encodedAnswer(
  results: readonly BatchResult[],
  segments: (r: VerifyKeyResult) => Segments | undefined,
): VerifyKeyBatchResponse {
  const $unknown = results.map((result) => {
    const r = result.result;
    // Each an unknown field of VerifyKeyBatchResponse: results (1), its bytes length-prefixed.
    if (r?.case === "response") {
      // The result: its field response (1), holding the VerifyKeyResponse.
      writer.fork().tag(1, WireType.LengthDelimited).fork();
      writeResponse(writer, r.value, segments(r.value) ?? segmentsOf(r.value));
      return { no: 1, wireType: WireType.LengthDelimited, data: writer.join().join().finish() };
    }
    const bytes = toBinary(ResultSchema, create(ResultSchema, result));
    return { no: 1, wireType: WireType.LengthDelimited, data: writer.bytes(bytes).finish() };
  });
  return { $typeName: "keys.v1.VerifyKeyBatchResponse", results: [], $unknown };
}

/** One writer for every answer: encoding is synchronous, and finish() leaves it empty. */
const writer = new BinaryWriter();

function writeResponse(w: BinaryWriter, r: VerifyKeyResult, s: Segments): void {
  if (r.valid) w.tag(1, WireType.Varint).bool(true);
  if (r.code) w.tag(2, WireType.Varint).int32(r.code);
  w.raw(s.before);
  if (r.credits !== undefined) w.tag(7, WireType.Varint).int64(r.credits);
  w.raw(s.after);
  for (const l of r.ratelimits ?? []) {
    w.tag(12, WireType.LengthDelimited).fork();
    if (l.id) w.tag(1, WireType.LengthDelimited).string(l.id);
    if (l.name) w.tag(2, WireType.LengthDelimited).string(l.name);
    if (l.limit) w.tag(3, WireType.Varint).int64(l.limit);
    if (l.duration) w.tag(4, WireType.Varint).int64(l.duration);
    if (l.reset) w.tag(5, WireType.Varint).int64(l.reset);
    if (l.remaining) w.tag(6, WireType.Varint).int64(l.remaining);
    if (l.exceeded) w.tag(7, WireType.Varint).bool(true);
    if (l.autoApply) w.tag(8, WireType.Varint).bool(true);
    w.join();
  }
}
