import { type DescMessage, type DescMethod, fromBinary } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import type { Transport, UnaryResponse } from "@connectrpc/connect";
import type { Caller, RatelimitConfig } from "@latchkey/proto/common/v1/common_pb";
import {
  type KeyIdentity,
  KeysService,
  type VerifyKeyBatchResult,
  VerifyKeyBatchResultSchema,
  type VerifyKeyRequest,
  type VerifyKeyResponse,
  type VerifyRatelimitRequest,
  type VerifyRatelimitResult,
} from "@latchkey/proto/keys/v1/keys_pb";

/**
 * Hand-written protobuf for VerifyKeyBatch, the batched call of the
 * verification hot path, over a transport that serialises (the gateway's own
 * process; not the all-in-one's localTransport, which hands messages over as
 * they are). LimitBatch's codecs are the runtime's ratelimitCodecs, given to
 * internalTransport (main.ts).
 *
 * Why: protobuf-es encodes and decodes by reflection, a field lookup and a
 * TextEncoder/TextDecoder call per string; for a batch of 30 full
 * verifications that was ~130 µs to encode and ~260 µs to decode, about 13 µs
 * of gateway CPU per request. Written out by hand it is a small fraction.
 *
 * How it crosses Connect without touching its serialisation: the batch is
 * sent as a google.protobuf.Empty whose unknown fields are the request's
 * top-level fields, already encoded (protobuf-es writes unknown fields as
 * they are), and the answer is read as an Empty whose unknown fields are the
 * results, each decoded here. The bytes on the wire are exactly the batch
 * request's and response's. A result this decoder does not expect (an error,
 * or a field it does not know, e.g. after a proto change) is decoded by
 * protobuf-es instead, so nothing is dropped: only the common case is fast.
 */
export function withBatchCodecs(transport: Transport): Transport {
  return {
    unary(method, signal, timeoutMs, header, input, contextValues) {
      const m: DescMethod = method;
      if (m === KeysService.method.verifyKeyBatch) {
        const raw = { ...m, input: EmptySchema, output: EmptySchema };
        const batch = input as unknown as Batch;
        const message = { $typeName: "google.protobuf.Empty" as const, $unknown: encodeBatch(batch) };
        return transport
          .unary(raw as never, signal, timeoutMs, header, message as never, contextValues)
          .then((res) => {
            const results = decodeResults(res.message as { $unknown?: Unknown[] });
            return {
              stream: false,
              service: method.parent,
              method,
              header: res.header,
              trailer: res.trailer,
              message: {
                $typeName: "keys.v1.VerifyKeyBatchResponse",
                results,
              },
            } as unknown as UnaryResponse<never, never>;
          });
      }
      return transport.unary(method, signal, timeoutMs, header, input, contextValues);
    },
    stream: (...args) => transport.stream(...args),
  };
}

/** An unknown field as protobuf-es keeps it: for length-delimited ones, `data` starts with the length. */
interface Unknown {
  no: number;
  wireType: number;
  data: Uint8Array;
}

interface Batch {
  callers?: Caller[];
  items?: { callerIndex?: number; request?: VerifyKeyRequest }[];
}

const LEN = 2;

// ---------------------------------------------------------------------------
// Encoding

/** Appends to one growing buffer; a nested message reserves one length byte and moves itself if it needs more. */
class Writer {
  buf: Buffer;
  pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  private ensure(n: number) {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  varint(v: number) {
    this.ensure(10);
    const buf = this.buf;
    while (v > 127) {
      buf[this.pos++] = (v & 127) | 128;
      v = Math.floor(v / 128);
    }
    buf[this.pos++] = v;
  }

  tag(no: number, wireType: number) {
    this.varint((no << 3) | wireType);
  }

  /** int64 as protobuf writes it: two's complement in ten bytes when negative. */
  int64(v: bigint | number | string) {
    if (typeof v === "bigint" && v >= 0n && v <= 9007199254740991n) return this.varint(Number(v));
    if (typeof v === "number" && v >= 0 && Number.isSafeInteger(v)) return this.varint(v);
    let u = BigInt.asUintN(64, BigInt(v));
    if (u <= 9007199254740991n) return this.varint(Number(u));
    this.ensure(10);
    while (u > 127n) {
      this.buf[this.pos++] = Number(u & 127n) | 128;
      u >>= 7n;
    }
    this.buf[this.pos++] = Number(u);
  }

  string(no: number, s: string) {
    this.tag(no, LEN);
    if (s.length < 43) {
      // At most 126 bytes of UTF-8: the length fits one byte. ASCII is copied
      // here (a call into C++ costs more than the loop for short strings).
      this.ensure(1 + s.length * 3);
      const buf = this.buf;
      const at = this.pos + 1;
      let i = 0;
      for (; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c > 127) break;
        buf[at + i] = c;
      }
      const n = i === s.length ? i : buf.write(s, at);
      buf[this.pos] = n;
      this.pos = at + n;
      return;
    }
    const n = Buffer.byteLength(s);
    this.varint(n);
    this.ensure(n);
    this.pos += this.buf.write(s, this.pos);
  }

  bool(no: number, b: boolean) {
    this.tag(no, 0);
    this.varint(b ? 1 : 0);
  }

  /** Starts a length-delimited body; `end(start)` writes its length. */
  begin(): number {
    this.ensure(1);
    return ++this.pos;
  }

  end(start: number) {
    const n = this.pos - start;
    if (n < 128) {
      this.buf[start - 1] = n;
      return;
    }
    let size = 1;
    for (let v = n; v > 127; v = Math.floor(v / 128)) size++;
    this.ensure(size - 1);
    this.buf.copyWithin(start + size - 1, start, this.pos);
    this.pos = start - 1;
    this.varint(n);
    this.pos += n;
  }
}

/**
 * The batch request as unknown fields of an Empty. protobuf-es writes each
 * unknown field as its tag followed by its bytes, as they are; so the whole
 * request is written here, top-level tags included, and handed over as one
 * entry: the first field's number, and every byte after its one-byte tag.
 * The bytes on the wire are the same as one entry per field, with one copy
 * instead of one per item.
 */
function encodeBatch(batch: Batch): Unknown[] {
  const callers = batch.callers ?? [];
  const items = batch.items ?? [];
  const w = new Writer(256 + items.length * 160);
  for (const c of callers) writeMessage(w, 1, c, writeCaller);
  for (const item of items) {
    w.tag(2, LEN);
    const start = w.begin();
    if (item.callerIndex) {
      w.tag(1, 0);
      w.varint(item.callerIndex);
    }
    if (item.request !== undefined) {
      w.tag(2, LEN);
      const req = w.begin();
      writeVerifyKeyRequest(w, item.request);
      w.end(req);
    }
    w.end(start);
  }
  if (w.pos === 0) return [];
  // Fields 1 and 2, length-delimited: the tag is one byte.
  return [{ no: w.buf[0]! >> 3, wireType: LEN, data: w.buf.subarray(1, w.pos) }];
}

function writeCaller(w: Writer, c: Caller) {
  if (c.workspaceId) w.string(1, c.workspaceId);
  if (c.rootKeyId) w.string(2, c.rootKeyId);
  for (const p of c.permissions ?? []) w.string(3, p);
}

function writeMessage<T>(w: Writer, no: number, m: T, write: (w: Writer, m: T) => void) {
  w.tag(no, LEN);
  const start = w.begin();
  write(w, m);
  w.end(start);
}

function writeVerifyKeyRequest(w: Writer, r: VerifyKeyRequest) {
  if (r.caller !== undefined) writeMessage(w, 1, r.caller, writeCaller);
  if (r.key) w.string(2, r.key);
  if (r.cost !== undefined) {
    w.tag(3, 0);
    w.int64(r.cost);
  }
  for (const t of r.tags ?? []) w.string(4, t);
  for (const l of r.ratelimits ?? []) writeMessage(w, 5, l, writeVerifyRatelimitRequest);
  if (r.permissions !== undefined) w.string(6, r.permissions);
  if (r.migrationId !== undefined) w.string(7, r.migrationId);
  if (r.requestId) w.string(8, r.requestId);
}

function writeVerifyRatelimitRequest(w: Writer, l: VerifyRatelimitRequest) {
  if (l.name) w.string(1, l.name);
  if (l.cost !== undefined) {
    w.tag(2, 0);
    w.int64(l.cost);
  }
  if (l.limit !== undefined) {
    w.tag(3, 0);
    w.int64(l.limit);
  }
  if (l.duration !== undefined) {
    w.tag(4, 0);
    w.int64(l.duration);
  }
}

// ---------------------------------------------------------------------------
// Decoding

/** Thrown inside the fast decoder for anything it does not expect; the result is then decoded by protobuf-es. */
const UNEXPECTED = new Error("unexpected field");

class Reader {
  pos: number;
  constructor(
    readonly buf: Uint8Array,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  varint(): number {
    let v = 0;
    let mul = 1;
    for (let i = 0; i < 8; i++) {
      if (this.pos >= this.end) throw UNEXPECTED;
      const b = this.buf[this.pos++]!;
      v += (b & 127) * mul;
      if (b < 128) {
        // Above 2^53 - 1 a number is no longer exact: not for the fast path.
        if (v > Number.MAX_SAFE_INTEGER) throw UNEXPECTED;
        return v;
      }
      mul *= 128;
    }
    // A negative int64 (ten bytes) or one beyond 2^56: not for the fast path.
    throw UNEXPECTED;
  }

  int64(): bigint {
    return BigInt(this.varint());
  }

  /** An int32 or enum: values that need more than 53 bits (negative ones) are not for the fast path. */
  int32(): number {
    const v = this.varint();
    if (v > 2147483647) throw UNEXPECTED;
    return v;
  }

  bool(): boolean {
    return this.varint() !== 0;
  }

  /** Where the length-delimited field that starts here ends. */
  len(): number {
    const n = this.varint();
    const end = this.pos + n;
    if (end > this.end) throw UNEXPECTED;
    return end;
  }

  string(): string {
    const end = this.len();
    const s = utf8(this.buf, this.pos, end);
    this.pos = end;
    return s;
  }
}

/** Short ASCII strings without a call into C++; anything else through Buffer. */
function utf8(buf: Uint8Array, start: number, end: number): string {
  if (end - start <= 48) {
    let s = "";
    for (let i = start; i < end; i++) {
      const b = buf[i]!;
      if (b > 127)
        return Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString("utf8", start, end);
      s += String.fromCharCode(b);
    }
    return s;
  }
  return Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString("utf8", start, end);
}

function decodeResults(message: { $unknown?: Unknown[] }): VerifyKeyBatchResult[] {
  const results: VerifyKeyBatchResult[] = [];
  for (const u of message.$unknown ?? []) {
    if (u.no !== 1 || u.wireType !== LEN) continue; // the response has no other field; ignore, as protobuf does
    const r = new Reader(u.data, 0, u.data.length);
    const end = r.len();
    const start = r.pos;
    results.push(verifyKeyResult(u.data, start, end));
  }
  return results;
}

/** How many results protobuf-es decoded because the fast decoder did not expect them (tests read it). */
export const codecStats = { fallbacks: 0 };

function fallback<S extends DescMessage>(schema: S, data: Uint8Array, start: number, end: number) {
  codecStats.fallbacks++;
  return fromBinary(schema, data.subarray(start, end));
}

/** One VerifyKeyBatchResult: a response decoded here, anything else by protobuf-es. */
export function verifyKeyResult(data: Uint8Array, start: number, end: number): VerifyKeyBatchResult {
  try {
    const r = new Reader(data, start, end);
    let value: VerifyKeyResponse | undefined;
    while (r.pos < end) {
      const tag = r.varint();
      if (tag !== ((1 << 3) | LEN) || value !== undefined) throw UNEXPECTED;
      value = verifyKeyResponse(r, r.len());
    }
    if (value === undefined) throw UNEXPECTED;
    return { $typeName: "keys.v1.VerifyKeyBatchResult", result: { case: "response", value } };
  } catch (err) {
    if (err !== UNEXPECTED) throw err;
    return fallback(VerifyKeyBatchResultSchema, data, start, end);
  }
}

function verifyKeyResponse(r: Reader, end: number): VerifyKeyResponse {
  const m: VerifyKeyResponse = {
    $typeName: "keys.v1.VerifyKeyResponse",
    valid: false,
    code: 0,
    keyId: undefined,
    name: undefined,
    metaJson: undefined,
    expires: undefined,
    credits: undefined,
    enabled: undefined,
    permissions: [],
    roles: [],
    identity: undefined,
    ratelimits: [],
  };
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag) {
      case (1 << 3) | 0:
        m.valid = r.bool();
        break;
      case (2 << 3) | 0:
        m.code = r.int32();
        break;
      case (3 << 3) | LEN:
        m.keyId = r.string();
        break;
      case (4 << 3) | LEN:
        m.name = r.string();
        break;
      case (5 << 3) | LEN:
        m.metaJson = r.string();
        break;
      case (6 << 3) | 0:
        m.expires = r.int64();
        break;
      case (7 << 3) | 0:
        m.credits = r.int64();
        break;
      case (8 << 3) | 0:
        m.enabled = r.bool();
        break;
      case (9 << 3) | LEN:
        m.permissions.push(r.string());
        break;
      case (10 << 3) | LEN:
        m.roles.push(r.string());
        break;
      case (11 << 3) | LEN:
        if (m.identity !== undefined) throw UNEXPECTED;
        m.identity = keyIdentity(r, r.len());
        break;
      case (12 << 3) | LEN:
        m.ratelimits.push(verifyRatelimitResult(r, r.len()));
        break;
      default:
        throw UNEXPECTED;
    }
  }
  if (r.pos !== end) throw UNEXPECTED;
  return m;
}

function verifyRatelimitResult(r: Reader, end: number): VerifyRatelimitResult {
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
    switch (r.varint()) {
      case (1 << 3) | LEN:
        m.id = r.string();
        break;
      case (2 << 3) | LEN:
        m.name = r.string();
        break;
      case (3 << 3) | 0:
        m.limit = r.int64();
        break;
      case (4 << 3) | 0:
        m.duration = r.int64();
        break;
      case (5 << 3) | 0:
        m.reset = r.int64();
        break;
      case (6 << 3) | 0:
        m.remaining = r.int64();
        break;
      case (7 << 3) | 0:
        m.exceeded = r.bool();
        break;
      case (8 << 3) | 0:
        m.autoApply = r.bool();
        break;
      default:
        throw UNEXPECTED;
    }
  }
  if (r.pos !== end) throw UNEXPECTED;
  return m;
}

function keyIdentity(r: Reader, end: number): KeyIdentity {
  const m: KeyIdentity = {
    $typeName: "keys.v1.KeyIdentity",
    id: "",
    externalId: "",
    metaJson: undefined,
    ratelimits: [],
  };
  while (r.pos < end) {
    switch (r.varint()) {
      case (1 << 3) | LEN:
        m.id = r.string();
        break;
      case (2 << 3) | LEN:
        m.externalId = r.string();
        break;
      case (3 << 3) | LEN:
        m.metaJson = r.string();
        break;
      case (4 << 3) | LEN:
        m.ratelimits.push(ratelimitConfig(r, r.len()));
        break;
      default:
        throw UNEXPECTED;
    }
  }
  if (r.pos !== end) throw UNEXPECTED;
  return m;
}

function ratelimitConfig(r: Reader, end: number): RatelimitConfig {
  const m: RatelimitConfig = {
    $typeName: "common.v1.RatelimitConfig",
    id: "",
    name: "",
    limit: 0n,
    duration: 0n,
    autoApply: false,
  };
  while (r.pos < end) {
    switch (r.varint()) {
      case (1 << 3) | LEN:
        m.id = r.string();
        break;
      case (2 << 3) | LEN:
        m.name = r.string();
        break;
      case (3 << 3) | 0:
        m.limit = r.int64();
        break;
      case (4 << 3) | 0:
        m.duration = r.int64();
        break;
      case (5 << 3) | 0:
        m.autoApply = r.bool();
        break;
      default:
        throw UNEXPECTED;
    }
  }
  if (r.pos !== end) throw UNEXPECTED;
  return m;
}
