import {
  create,
  type DescField,
  type DescMessage,
  fromBinary,
  type MessageShape,
  ScalarType,
  toBinary,
} from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import { encodeKeyVerified } from "@latchkey/keys/events";
import { encodedAnswer, segmentsOf } from "@latchkey/keys/verify/batch-wire";
import {
  decodeVerifyKeyBatchRequest,
  decodeVerifyKeyBatchResponse,
  encodeVerifyKeyBatchRequest,
  readVerifyKeyBatchRequest,
  readVerifyKeyBatchResponse,
} from "@latchkey/proto/codecs/keys";
import {
  decodeCheckNamedLimitsRequest,
  decodeCheckNamedLimitsResponse,
  decodeLimitBatchRequest,
  decodeLimitBatchResponse,
  encodeCheckNamedLimitsRequest,
  encodeCheckNamedLimitsResponse,
  encodeLimitBatchRequest,
  encodeLimitBatchResponse,
  readCheckNamedLimitsRequest,
  readCheckNamedLimitsResponse,
  readLimitBatchRequest,
  readLimitBatchResponse,
} from "@latchkey/proto/codecs/ratelimit";
import { EventBatchSchema } from "@latchkey/proto/common/v1/common_pb";
import { KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { VerifyKeyBatchRequestSchema, VerifyKeyBatchResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import {
  CheckNamedLimitsRequestSchema,
  CheckNamedLimitsResponseSchema,
  LimitBatchRequestSchema,
  LimitBatchResponseSchema,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { encodeRatelimitChecked } from "@latchkey/ratelimit/events";
import { encodeEventBatch } from "@latchkey/runtime";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

/**
 * Every hand-written codec of Latchkey against protobuf-es, on random
 * messages: each encoder writes toBinary's bytes, each decoder gives
 * fromBinary's message for toBinary's bytes and fromBinary's answer or error
 * for any bytes at all. The messages come from the schemas themselves, so a
 * field added to a proto is exercised without anyone listing it: every field
 * set or at its default, unknown fields, int64 at its bounds, empty, long and
 * non-ASCII strings, doubles of every kind.
 */

interface FastCodec {
  name: string;
  schema: DescMessage;
  encode?: (message: never) => Uint8Array;
  decode?: (bytes: Uint8Array) => unknown;
  /**
   * The decoder's own reading alone (it throws UNHANDLED where the decoder hands a message to
   * fromBinary), and which messages without unknown fields it must read itself: else it is only slower.
   */
  byHand?: { read: (bytes: Uint8Array) => unknown; handles?: (message: never) => boolean };
  /** Whether random messages may carry unknown fields (false where the codec's input cannot hold them). */
  unknown?: boolean;
}

const CODECS: FastCodec[] = [
  // keys (proto/codecs/keys.ts; the service's verify/batch-wire.ts and events.ts)
  {
    name: "VerifyKeyBatchRequest",
    schema: VerifyKeyBatchRequestSchema,
    encode: encodeVerifyKeyBatchRequest,
    decode: decodeVerifyKeyBatchRequest,
    byHand: { read: readVerifyKeyBatchRequest },
  },
  {
    name: "VerifyKeyBatchResponse",
    schema: VerifyKeyBatchResponseSchema,
    decode: decodeVerifyKeyBatchResponse,
    byHand: {
      read: readVerifyKeyBatchResponse,
      // An item's error, and a code that is not a non-negative int32, are left to fromBinary.
      handles: (m: MessageShape<typeof VerifyKeyBatchResponseSchema>) =>
        m.results.every(
          (r) => r.result.case !== "error" && (r.result.case === undefined || r.result.value.code >= 0),
        ),
    },
  },
  {
    name: "VerifyKeyBatchResponse pre-encoded (batch-wire)",
    schema: VerifyKeyBatchResponseSchema,
    encode: (m: MessageShape<typeof VerifyKeyBatchResponseSchema>) =>
      toBinary(
        VerifyKeyBatchResponseSchema,
        encodedAnswer(m.results, (i, r) => (i % 2 === 0 ? segmentsOf(r) : undefined)),
      ),
    // Its results are taken one by one: the response's own unknown fields are not its input.
    unknown: false,
  },
  { name: "KeyVerified", schema: KeyVerifiedSchema, encode: encodeKeyVerified },
  // ratelimit (proto/codecs/ratelimit.ts; the service's events.ts)
  {
    name: "CheckNamedLimitsRequest",
    schema: CheckNamedLimitsRequestSchema,
    encode: encodeCheckNamedLimitsRequest,
    decode: decodeCheckNamedLimitsRequest,
    byHand: { read: readCheckNamedLimitsRequest },
  },
  {
    name: "CheckNamedLimitsResponse",
    schema: CheckNamedLimitsResponseSchema,
    encode: encodeCheckNamedLimitsResponse,
    decode: decodeCheckNamedLimitsResponse,
    byHand: { read: readCheckNamedLimitsResponse },
  },
  {
    name: "LimitBatchRequest",
    schema: LimitBatchRequestSchema,
    encode: encodeLimitBatchRequest,
    decode: decodeLimitBatchRequest,
    byHand: { read: readLimitBatchRequest },
  },
  {
    name: "LimitBatchResponse",
    schema: LimitBatchResponseSchema,
    encode: encodeLimitBatchResponse,
    decode: decodeLimitBatchResponse,
    byHand: {
      read: readLimitBatchResponse,
      // An item's error is left to fromBinary.
      handles: (m: MessageShape<typeof LimitBatchResponseSchema>) =>
        m.results.every((r) => r.result.case !== "error"),
    },
  },
  { name: "RatelimitChecked", schema: RatelimitCheckedSchema, encode: encodeRatelimitChecked },
  // the runtime (events.ts): a batch of events already encoded, given as ids and bytes
  {
    name: "EventBatch",
    schema: EventBatchSchema,
    encode: (m: MessageShape<typeof EventBatchSchema>) => encodeEventBatch(m.events),
    unknown: false,
  },
];

const INT64_EDGES = [
  0n,
  1n,
  -1n,
  127n,
  128n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 53n + 1n,
  2n ** 63n - 1n,
  -(2n ** 63n),
];
const UINT64_EDGES = [0n, 1n, 127n, 128n, 2n ** 53n + 1n, 2n ** 64n - 1n];

const text = fc.oneof(
  fc.constant(""),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 12 }),
  // Past one byte of length (127), and past the writers' short-string paths.
  fc.string({ unit: "binary", minLength: 40, maxLength: 200 }),
  fc.string({ minLength: 120, maxLength: 140 }),
);

function scalar(type: ScalarType): fc.Arbitrary<unknown> {
  switch (type) {
    case ScalarType.STRING:
      return text;
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.DOUBLE:
      return fc.double();
    case ScalarType.FLOAT:
      return fc.float().map(Math.fround);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return fc.oneof(fc.constantFrom(...INT64_EDGES), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }));
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return fc.oneof(fc.constantFrom(...UINT64_EDGES), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }));
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return fc.oneof(fc.constantFrom(0, 1, 127, 128, 2 ** 32 - 1), fc.nat({ max: 2 ** 32 - 1 }));
    case ScalarType.BYTES:
      return fc.uint8Array({ maxLength: 40 });
    default:
      return fc.oneof(
        fc.constantFrom(0, 1, -1, 2 ** 31 - 1, -(2 ** 31)),
        fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      );
  }
}

/** Unknown fields as protobuf-es keeps them: varints on field numbers no message here uses. */
const unknownFields = fc.array(
  fc.record({
    no: fc.integer({ min: 100, max: 2000 }),
    wireType: fc.constant(WireType.Varint),
    data: fc.integer({ min: 0, max: 127 }).map((v) => Uint8Array.of(v)),
  }),
  { minLength: 1, maxLength: 2 },
);

function field(f: DescField, depth: number, unknown: boolean): fc.Arbitrary<unknown> {
  switch (f.fieldKind) {
    case "scalar":
      return scalar(f.scalar);
    case "enum":
      // Known values mostly, an unknown or negative one now and then.
      return fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...f.enum.values.map((v) => v.number)) },
        { weight: 1, arbitrary: fc.constantFrom(-1, 99) },
      );
    case "message":
      return message(f.message, depth + 1, unknown);
    case "list":
      return fc.array(
        f.listKind === "scalar"
          ? scalar(f.scalar)
          : f.listKind === "enum"
            ? fc.constantFrom(...f.enum.values.map((v) => v.number))
            : message(f.message, depth + 1, unknown),
        { maxLength: depth > 2 ? 1 : 3 },
      );
    case "map":
      throw new Error(`${f.name}: maps are not in the hot path's messages`);
  }
}

/** A random message of `schema`: each field set, left unset (presence) or at its default. */
function message(schema: DescMessage, depth = 0, unknown = true): fc.Arbitrary<MessageShape<DescMessage>> {
  const parts: Record<string, fc.Arbitrary<unknown>> = {};
  for (const member of schema.members) {
    if (member.kind === "oneof") {
      const cases = member.fields.map((f) =>
        field(f, depth, unknown).map((value) => ({ case: f.localName, value })),
      );
      parts[member.localName] =
        depth > 3 ? fc.constant({ case: undefined }) : fc.oneof(fc.constant({ case: undefined }), ...cases);
      continue;
    }
    const f = member;
    // Past a depth, a message field is left unset so messages stay small.
    if (f.fieldKind === "message" && depth > 3) continue;
    const value = field(f, depth, unknown);
    parts[f.localName] =
      f.presence === 2 /* implicit */ || f.fieldKind === "list"
        ? value
        : fc.option(value, { nil: undefined });
  }
  // Where they may appear, one message in four carries some.
  const unknowns = unknown
    ? fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: unknownFields })
    : fc.constant(undefined);
  return fc.record({ fields: fc.record(parts), unknowns }).map(({ fields, unknowns }) => {
    const init: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) init[k] = v;
    const m = create(schema, init as never);
    if (unknowns !== undefined) m.$unknown = unknowns;
    return m;
  });
}

/** Compared as byte lists: the writers answer pooled Buffers, toBinary plain Uint8Arrays. */
const bytes = (b: Uint8Array) => [...b];

/** fromBinary's message, or its error's message. */
function reference(schema: DescMessage, input: Uint8Array): { message: unknown } | { error: string } {
  try {
    return { message: fromBinary(schema, input) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

function decoded(
  decode: (b: Uint8Array) => unknown,
  input: Uint8Array,
): { message: unknown } | { error: string } {
  try {
    return { message: decode(input) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

const RUNS = 300;

describe.each(CODECS)("the hand-written $name codec against protobuf-es", (codec) => {
  // Half without unknown fields anywhere: a codec hands a message with any to protobuf-es, so only
  // those show that its own reading and writing are right.
  const messages = fc.oneof(message(codec.schema, 0, false), message(codec.schema, 0, codec.unknown ?? true));

  // Only the directions a codec has: an encoder-only codec gets no decoding tests.
  const { encode, decode, byHand } = codec;
  if (encode)
    it("encodes every message to toBinary's bytes", () => {
      fc.assert(
        fc.property(messages, (m) => {
          expect(bytes(encode(m as never))).toEqual(bytes(toBinary(codec.schema, m)));
        }),
        { numRuns: RUNS },
      );
    });

  if (decode)
    it("decodes toBinary's bytes of every message to fromBinary's message", () => {
      fc.assert(
        fc.property(messages, (m) => {
          const wire = toBinary(codec.schema, m);
          const expected = fromBinary(codec.schema, wire);
          expect(decode(wire)).toStrictEqual(expected);
          // As a server hands a body over: a slice of a larger Buffer.
          const larger = Buffer.concat([Buffer.from([1, 2, 3]), wire, Buffer.from([4, 5])]);
          const slice = larger.subarray(3, 3 + wire.length);
          expect(decode(slice)).toStrictEqual(fromBinary(codec.schema, slice));
        }),
        { numRuns: RUNS },
      );
    });

  if (byHand)
    it("reads every message without unknown fields by hand, not through fromBinary", () => {
      const { read, handles = () => true } = byHand;
      fc.assert(
        fc.property(
          message(codec.schema, 0, false).filter((m) => handles(m as never)),
          (m) => {
            const wire = toBinary(codec.schema, m);
            expect(read(wire)).toStrictEqual(fromBinary(codec.schema, wire));
          },
        ),
        { numRuns: RUNS },
      );
    });

  if (decode)
    it("answers any bytes as fromBinary does, message or error", () => {
      const valid = messages.map((m) => toBinary(codec.schema, m));
      // Valid messages cut short or with a byte changed, and bytes of no message at all.
      const broken = fc.oneof(
        fc.uint8Array({ maxLength: 64 }),
        fc.tuple(valid, fc.nat()).map(([b, cut]) => b.subarray(0, b.length === 0 ? 0 : cut % b.length)),
        fc.tuple(valid, fc.nat(), fc.nat({ max: 255 })).map(([b, at, v]) => {
          const copy = Uint8Array.from(b);
          if (copy.length > 0) copy[at % copy.length] = v;
          return copy;
        }),
      );
      fc.assert(
        fc.property(broken, (input) => {
          expect(decoded(decode, input)).toStrictEqual(reference(codec.schema, input));
        }),
        { numRuns: RUNS },
      );
    });
});
