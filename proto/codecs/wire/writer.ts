import { type DescMessage, type MessageShape, toBinary } from "@bufbuild/protobuf";
import type { Caller } from "../../gen/common/v1/common_pb.ts";
import { UNHANDLED } from "./reader.ts";

/**
 * Latchkey's one protobuf writer, for the hand-written codecs of the hot path
 * (the batched RPCs' messages, the events written once per verification or
 * check), where protobuf-es's reflective toBinary costs more than the work the
 * message carries. It writes proto3 fields as toBinary does: with implicit
 * presence, default values (0, "", false) are left out; the optional* methods
 * write a set field even at its default. Every codec built on it is checked
 * against toBinary on random messages (test/in-memory/fast-codecs.test.ts).
 */
export class WireWriter {
  private buf: Buffer;
  private pos = 0;
  /** Where each open nested message's content starts (see fork). */
  private readonly forks: number[] = [];

  constructor(capacity = 256) {
    this.buf = Buffer.allocUnsafe(capacity);
  }

  /** Bytes written since the last finish() or reset(). */
  get length(): number {
    return this.pos;
  }

  /**
   * The bytes written, copied into their own buffer; the writer starts over.
   * The copy comes from Node's buffer pool: a small new Uint8Array has its
   * own backing store, which costs more to allocate than encoding a message.
   */
  finish(): Uint8Array {
    if (this.forks.length > 0) throw new Error("finish() inside a fork()");
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    this.pos = 0;
    return out;
  }

  /** Drops whatever was written, open forks included. */
  reset(): void {
    this.pos = 0;
    this.forks.length = 0;
  }

  string(field: number, value: string): this {
    if (value === "") return this;
    const n = value.length;
    if (n < 0x80) {
      // Short ASCII (ids, names) is copied here, without two calls into Node's UTF-8 code.
      this.room(6 + n);
      const start = this.pos;
      this.key(field, 2);
      const buf = this.buf;
      buf[this.pos++] = n;
      let p = this.pos;
      for (let i = 0; i < n; i++) {
        const c = value.charCodeAt(i);
        if (c >= 0x80) break;
        buf[p++] = c;
      }
      if (p - this.pos === n) {
        this.pos = p;
        return this;
      }
      this.pos = start;
    }
    const length = Buffer.byteLength(value);
    this.room(10 + length);
    this.key(field, 2);
    this.varint(length);
    this.pos += this.buf.write(value, this.pos, "utf8");
    return this;
  }

  /** An int64 (or a uint32) given as a whole JS number. */
  int64(field: number, value: number): this {
    if (value === 0) return this;
    this.room(20);
    this.key(field, 0);
    if (value > 0 && value <= Number.MAX_SAFE_INTEGER) this.varint(value);
    else this.bigVarint(BigInt.asUintN(64, BigInt(Math.trunc(value))));
    return this;
  }

  /** An int64 given as protobuf-es holds it (bigint), exact over the whole range. */
  bigint64(field: number, value: bigint): this {
    // One conversion, then number comparisons: comparing bigints is a call into the runtime.
    const n = Number(value);
    if (n === 0) return this;
    this.room(20);
    this.key(field, 0);
    if (n > 0 && n <= Number.MAX_SAFE_INTEGER) this.varint(n);
    else this.bigVarint(BigInt.asUintN(64, value));
    return this;
  }

  /** An int64 with explicit presence (proto3 `optional`): written when set, even 0. */
  optionalBigint64(field: number, value: bigint | undefined): this {
    if (value === undefined) return this;
    if (value !== 0n) return this.bigint64(field, value);
    this.room(11);
    this.key(field, 0);
    this.buf[this.pos++] = 0;
    return this;
  }

  /** A bool with explicit presence (proto3 `optional`): written when set, even false. */
  optionalBool(field: number, value: boolean | undefined): this {
    if (value === undefined) return this;
    this.room(11);
    this.key(field, 0);
    this.buf[this.pos++] = value ? 1 : 0;
    return this;
  }

  /** A string with explicit presence (proto3 `optional`): written when set, even empty. */
  optionalString(field: number, value: string | undefined): this {
    if (value === undefined) return this;
    if (value !== "") return this.string(field, value);
    this.room(6);
    this.key(field, 2);
    this.buf[this.pos++] = 0;
    return this;
  }

  /** A bytes field (implicit presence: left out when empty). */
  bytes(field: number, value: Uint8Array): this {
    if (value.length === 0) return this;
    return this.message(field, value);
  }

  /** Bytes already encoded as fields (e.g. a message's fields kept from an earlier encoding), as they are. */
  raw(bytes: Uint8Array): this {
    this.room(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
    return this;
  }

  /** A message field whose bytes are already encoded (e.g. by toBinary). */
  message(field: number, bytes: Uint8Array): this {
    this.room(10 + bytes.length);
    this.key(field, 2);
    this.varint(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
    return this;
  }

  /**
   * Opens a nested message as field `field`: what follows is its content until
   * the matching join(). One byte is kept for the length, enough below 128
   * bytes; join() moves a longer content to make room.
   */
  fork(field: number): this {
    this.room(11);
    this.key(field, 2);
    this.forks.push(++this.pos);
    return this;
  }

  /** Closes the innermost fork, writing its length. */
  join(): this {
    const start = this.forks.pop();
    if (start === undefined) throw new Error("join() without fork()");
    const length = this.pos - start;
    if (length < 0x80) {
      this.buf[start - 1] = length;
      return this;
    }
    const extra = varintSize(length) - 1;
    this.room(extra);
    this.buf.copyWithin(start + extra, start, this.pos);
    this.pos = start - 1;
    this.varint(length);
    this.pos += length;
    return this;
  }

  bool(field: number, value: boolean): this {
    if (!value) return this;
    this.room(11);
    this.key(field, 0);
    this.buf[this.pos++] = 1;
    return this;
  }

  double(field: number, value: number): this {
    // toBinary leaves out 0 but writes -0 (Object.is), like any other set value.
    if (value === 0 && !Object.is(value, -0)) return this;
    this.room(18);
    this.key(field, 1);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
    return this;
  }

  private key(field: number, wireType: number): void {
    this.varint(field * 8 + wireType);
  }

  private varint(value: number): void {
    while (value >= 0x80) {
      this.buf[this.pos++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.buf[this.pos++] = value;
  }

  /** Negative int64s are written as ten-byte two's complement varints, as toBinary does. */
  private bigVarint(value: bigint): void {
    while (value >= 0x80n) {
      this.buf[this.pos++] = Number(value & 0x7fn) | 0x80;
      value >>= 7n;
    }
    this.buf[this.pos++] = Number(value);
  }

  private room(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }
}

/** Bytes of a varint holding `value` (0 to 2^53). */
export function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    size++;
  }
  return size;
}

// One writer per process: encoding is synchronous, and finish() copies the bytes out.
const shared = new WireWriter(4096);

/**
 * `write`'s bytes, or toBinary's where it throws UNHANDLED (e.g. at unknown
 * fields, which the services never set): every message gets toBinary's bytes.
 */
export function writeOr<S extends DescMessage>(
  schema: S,
  message: MessageShape<S>,
  write: (w: WireWriter) => void,
): Uint8Array {
  try {
    write(shared);
    return shared.finish();
  } catch (err) {
    shared.reset();
    if (err !== UNHANDLED) throw err;
    return toBinary(schema, message);
  }
}

/** common.v1.Caller's fields (readCaller's counterpart). */
export function writeCaller(w: WireWriter, caller: Caller): WireWriter {
  if (caller.$unknown !== undefined) throw UNHANDLED;
  w.string(1, caller.workspaceId).string(2, caller.rootKeyId);
  for (const p of caller.permissions) w.optionalString(3, p);
  return w.string(4, caller.requestId);
}
