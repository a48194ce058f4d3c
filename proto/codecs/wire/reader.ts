import { type DescMessage, fromBinary, type MessageShape } from "@bufbuild/protobuf";
import { getTextEncoding } from "@bufbuild/protobuf/wire";
import type { Caller } from "../../gen/common/v1/common_pb.ts";

/**
 * Thrown by WireReader, and by the decoders built on it, at anything they
 * leave to protobuf-es: unknown fields, unexpected wire types, a message field
 * seen twice (fromBinary merges them), invalid UTF-8, truncated input. The decoder then decodes the same bytes with
 * fromBinary, so every input gets exactly fromBinary's answer or error.
 * Created once: throwing it costs no stack trace.
 */
export const UNHANDLED = new Error("left to fromBinary");

/** Buffer's own latin1 decoder (what toString("latin1") calls after its argument checks); untyped in @types/node. */
type LatinSlicing = Buffer & { latin1Slice(start: number, end: number): string };

/**
 * Latchkey's one protobuf reader, for the hand-written decoders of the hot
 * path, where protobuf-es's reflective fromBinary costs more than handling
 * the message. It reads the common shapes only and throws UNHANDLED at
 * anything else, so that readOr hands the whole message to fromBinary.
 */
export class WireReader {
  pos = 0;
  readonly end: number;
  private readonly buf: Buffer;

  constructor(bytes: Uint8Array) {
    this.buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.end = bytes.byteLength;
  }

  /** A varint of up to 5 bytes as uint32 (tags, lengths, uint32 fields), as protobuf-es truncates it. */
  uint32(): number {
    const buf = this.buf;
    let b = buf[this.pos++]!;
    if (b < 0x80) return b;
    let n = b & 0x7f;
    let mul = 0x80;
    for (let i = 1; i < 5; i++) {
      b = buf[this.pos++]!;
      n += (b & 0x7f) * mul;
      if (b < 0x80) return this.pos > this.end ? this.unhandled() : n >>> 0;
      mul *= 0x80;
    }
    return this.unhandled();
  }

  /** An int64 varint as protobuf-es gives it (bigint, negative from ten-byte two's complement). */
  int64(): bigint {
    const buf = this.buf;
    const start = this.pos;
    let n = 0;
    let mul = 1;
    // Up to 7 bytes (49 bits) add up exactly as a number.
    for (let i = 0; i < 7; i++) {
      const b = buf[this.pos++]!;
      n += (b & 0x7f) * mul;
      if (b < 0x80) return this.pos > this.end ? this.unhandled() : BigInt(n);
      mul *= 0x80;
    }
    this.pos = start;
    let v = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      const b = buf[this.pos++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return this.pos > this.end ? this.unhandled() : BigInt.asIntN(64, v);
    }
    return this.unhandled();
  }

  /** A bool varint: true when any bit is set. */
  bool(): boolean {
    let set = false;
    for (let i = 0; i < 10; i++) {
      const b = this.buf[this.pos++]!;
      if ((b & 0x7f) !== 0) set = true;
      if (b < 0x80) return this.pos > this.end ? this.unhandled() : set;
    }
    return this.unhandled();
  }

  /** The end of a length-delimited field starting here, within `within`. */
  delimited(within: number): number {
    const length = this.uint32();
    const end = this.pos + length;
    return end > within ? this.unhandled() : end;
  }

  /**
   * A string field. ASCII is read here; other text through protobuf-es's own
   * UTF-8 decoder, strict as fromBinary is for proto3 strings (invalid UTF-8:
   * UNHANDLED, so fromBinary raises its own error).
   */
  string(within: number): string {
    const end = this.delimited(within);
    const start = this.pos;
    const buf = this.buf;
    this.pos = end;
    for (let i = start; i < end; i++) {
      if (buf[i]! >= 0x80) {
        try {
          return getTextEncoding().decodeUtf8(buf.subarray(start, end), true);
        } catch {
          return this.unhandled();
        }
      }
    }
    return start === end ? "" : (buf as LatinSlicing).latin1Slice(start, end);
  }

  /** A double (fixed64, little-endian). */
  double(): number {
    const at = this.pos;
    if (at + 8 > this.end) this.unhandled();
    this.pos = at + 8;
    return this.buf.readDoubleLE(at);
  }

  /** Ends a nested message: its fields must end exactly at its length. */
  close(end: number): void {
    if (this.pos !== end) this.unhandled();
  }

  unhandled(): never {
    throw UNHANDLED;
  }
}

/** `read`'s message, or fromBinary's where it throws UNHANDLED, so every input gets fromBinary's answer or error. */
export function readOr<S extends DescMessage>(
  schema: S,
  bytes: Uint8Array,
  read: (bytes: Uint8Array) => MessageShape<S>,
): MessageShape<S> {
  try {
    return read(bytes);
  } catch (err) {
    if (err !== UNHANDLED) throw err;
    return fromBinary(schema, bytes);
  }
}

/** common.v1.Caller, the first field of every batch request. */
export function readCaller(r: WireReader, end: number): Caller {
  const caller: Caller = {
    $typeName: "common.v1.Caller",
    workspaceId: "",
    rootKeyId: "",
    permissions: [],
    requestId: "",
  };
  while (r.pos < end) {
    const tag = r.uint32();
    // Tags 10, 18, 26, 34: fields 1, 2, 3, 4, length-delimited.
    if (tag === 10) caller.workspaceId = r.string(end);
    else if (tag === 18) caller.rootKeyId = r.string(end);
    else if (tag === 26) caller.permissions.push(r.string(end));
    else if (tag === 34) caller.requestId = r.string(end);
    else r.unhandled();
  }
  r.close(end);
  return caller;
}
