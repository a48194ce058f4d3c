import { toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import type { HandlerContext } from "@connectrpc/connect";
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
    after.tag(11, WireType.LengthDelimited).bytes(toBinary(KeyIdentitySchema, r.identity));
  }
  return { before: before.finish(), after: after.finish() };
}

/**
 * The batch's answer with its results pre-encoded. `segments` gives the
 * cached segments of a result (VerificationMemos keeps them per cached key); a
 * result without, or an error, is encoded by protobuf-es.
 */
export function encodedAnswer(
  results: readonly VerifyKeyBatchResult[],
  /** The segments of result `index`'s answer, when they are kept. */
  segments: (index: number, response: VerifyKeyResponse) => Segments | undefined,
): VerifyKeyBatchResponse {
  const $unknown = results.map((result, index) => {
    const r = result.result;
    // Each an unknown field of VerifyKeyBatchResponse: results (1), its bytes length-prefixed.
    if (r?.case === "response") {
      const w = new AnswerWriter();
      const outer = w.open();
      // The result: its field response (1), holding the VerifyKeyResponse.
      w.tag(1, WireType.LengthDelimited);
      const inner = w.open();
      writeResponse(w, r.value, segments(index, r.value) ?? segmentsOf(r.value));
      w.close(inner);
      w.close(outer);
      return { no: 1, wireType: WireType.LengthDelimited, data: w.bytes() };
    }
    const bytes = toBinary(ResultSchema, result);
    return { no: 1, wireType: WireType.LengthDelimited, data: new BinaryWriter().bytes(bytes).finish() };
  });
  return { $typeName: "keys.v1.VerifyKeyBatchResponse", results: [], $unknown };
}

function writeResponse(w: AnswerWriter, r: VerifyKeyResponse, s: Segments): void {
  if (r.valid) w.tag(1, WireType.Varint).varint(1);
  if (r.code) w.tag(2, WireType.Varint).varint(r.code);
  w.raw(s.before);
  if (r.credits !== undefined) w.tag(7, WireType.Varint).int64(r.credits);
  w.raw(s.after);
  for (const l of r.ratelimits ?? []) {
    w.tag(12, WireType.LengthDelimited);
    const at = w.open();
    if (l.id) w.tag(1, WireType.LengthDelimited).string(l.id);
    if (l.name) w.tag(2, WireType.LengthDelimited).string(l.name);
    if (l.limit) w.tag(3, WireType.Varint).int64(l.limit);
    if (l.duration) w.tag(4, WireType.Varint).int64(l.duration);
    if (l.reset) w.tag(5, WireType.Varint).int64(l.reset);
    if (l.remaining) w.tag(6, WireType.Varint).int64(l.remaining);
    if (l.exceeded) w.tag(7, WireType.Varint).varint(1);
    if (l.autoApply) w.tag(8, WireType.Varint).varint(1);
    w.close(at);
  }
}

/**
 * A growable buffer for one answer. A length-delimited part is opened with
 * one byte kept for its length and closed once written, moving its bytes on
 * when the length needs more than one byte (128 or more).
 */
class AnswerWriter {
  private buf = Buffer.allocUnsafe(512);
  private pos = 0;

  tag(field: number, wireType: WireType): this {
    return this.varint((field << 3) | wireType);
  }

  /** A non-negative integer below 2^53. */
  varint(value: number): this {
    this.room(8);
    while (value > 127) {
      this.buf[this.pos++] = (value % 128) | 128;
      value = Math.floor(value / 128);
    }
    this.buf[this.pos++] = value;
    return this;
  }

  int64(value: bigint | number | string): this {
    const big = BigInt(value);
    if (big >= 0n && big <= 9_007_199_254_740_991n) return this.varint(Number(big));
    // Negative or huge: two's complement in 64 bits, as int64 is written.
    let rest = BigInt.asUintN(64, big);
    this.room(10);
    while (rest > 127n) {
      this.buf[this.pos++] = Number(rest & 127n) | 128;
      rest >>= 7n;
    }
    this.buf[this.pos++] = Number(rest);
    return this;
  }

  string(value: string): this {
    const length = Buffer.byteLength(value);
    this.varint(length);
    this.room(length);
    this.pos += this.buf.write(value, this.pos, "utf8");
    return this;
  }

  raw(bytes: Uint8Array): this {
    this.room(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
    return this;
  }

  /** Starts a length-delimited part; close() with what this answers. */
  open(): number {
    this.room(1);
    return this.pos++;
  }

  close(start: number): void {
    const length = this.pos - start - 1;
    let size = 1;
    for (let v = length; v > 127; v = Math.floor(v / 128)) size++;
    if (size > 1) {
      this.room(size - 1);
      this.buf.copyWithin(start + size, start + 1, this.pos);
      this.pos += size - 1;
    }
    let at = start;
    let v = length;
    while (v > 127) {
      this.buf[at++] = (v % 128) | 128;
      v = Math.floor(v / 128);
    }
    this.buf[at] = v;
  }

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }

  private room(more: number): void {
    if (this.pos + more <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + more));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }
}
