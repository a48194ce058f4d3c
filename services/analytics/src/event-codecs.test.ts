import { create, type DescMessage, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { UNHANDLED } from "@latchkey/runtime/wire/reader";
import { describe, expect, it } from "vitest";
import {
  decodeKeyVerified,
  decodeRatelimitChecked,
  readKeyVerified,
  readRatelimitChecked,
} from "./event-codecs.ts";

/** The decoder gives fromBinary's message, or throws fromBinary's error. */
function sameDecoding(schema: DescMessage, decode: (b: Uint8Array) => unknown, bytes: Uint8Array) {
  let expected: unknown;
  let error: unknown;
  try {
    expected = fromBinary(schema, bytes);
  } catch (err) {
    error = err;
  }
  if (error !== undefined) expect(() => decode(bytes)).toThrow((error as Error).message);
  else expect(decode(bytes)).toStrictEqual(expected);
}

/** The common shapes are read by hand, not handed to fromBinary (else the decoder would only be slower). */
function readByHand(schema: DescMessage, read: (b: Uint8Array) => unknown, bytes: Uint8Array) {
  expect(read(bytes)).toStrictEqual(fromBinary(schema, bytes));
}

const verified = (init: MessageInitShape<typeof KeyVerifiedSchema>) =>
  toBinary(KeyVerifiedSchema, create(KeyVerifiedSchema, init));
const checked = (init: MessageInitShape<typeof RatelimitCheckedSchema>) =>
  toBinary(RatelimitCheckedSchema, create(RatelimitCheckedSchema, init));
const sameVerified = (bytes: Uint8Array) => sameDecoding(KeyVerifiedSchema, decodeKeyVerified, bytes);
const sameChecked = (bytes: Uint8Array) =>
  sameDecoding(RatelimitCheckedSchema, decodeRatelimitChecked, bytes);

const int64s = [
  0n,
  1n,
  127n,
  128n,
  2n ** 49n - 1n,
  2n ** 49n,
  2n ** 53n + 1n,
  2n ** 63n - 1n,
  -1n,
  -(2n ** 63n),
];
const doubles = [0, 0.5, 1.25e-3, -3.75, 1e300, 5e-324, Number.NaN, Number.POSITIVE_INFINITY, -0];

const fullVerification = {
  requestId: "req_3kQpZ8mVtR2xYc",
  time: BigInt(Date.UTC(2026, 10, 22, 9)),
  workspaceId: "ws_1",
  apiId: "api_1",
  keyId: "key_1",
  identityId: "id_1",
  externalId: "user_'1",
  outcome: "RATE_LIMITED",
  tags: ["env=prod", "path=/v1", "", "env=prod"],
  spentCredits: 3n,
  latency: 0.4375,
};

describe("the hand-written KeyVerified decoder", () => {
  it("gives fromBinary's message for every field set, and for none, read by hand", () => {
    for (const bytes of [verified(fullVerification), verified({}), verified({ outcome: "VALID" })]) {
      readByHand(KeyVerifiedSchema, readKeyVerified, bytes);
      sameVerified(bytes);
    }
  });

  it("reads int64s over their whole range and doubles of every kind, by hand", () => {
    for (const v of int64s) {
      const bytes = verified({ time: v, spentCredits: v });
      readByHand(KeyVerifiedSchema, readKeyVerified, bytes);
    }
    for (const latency of doubles) {
      const bytes = verified({ latency });
      readByHand(KeyVerifiedSchema, readKeyVerified, bytes);
    }
  });

  it("keeps the last of a scalar field sent twice, as fromBinary does", () => {
    const bytes = Uint8Array.from([
      ...verified({ outcome: "VALID", time: 5n }),
      ...verified({ outcome: "X" }),
    ]);
    readByHand(KeyVerifiedSchema, readKeyVerified, bytes);
    expect(decodeKeyVerified(bytes)).toMatchObject({ outcome: "X", time: 5n });
  });

  it("leaves non-ASCII and invalid UTF-8, unknown fields, other wire types and truncated input to fromBinary", () => {
    sameVerified(verified({ ...fullVerification, externalId: "usér 🙂", tags: ["ü"] }));
    const valid = verified(fullVerification);
    const invalid = Uint8Array.from(valid);
    // The first byte of the request id's text.
    invalid[2] = 0xff;
    sameVerified(invalid);
    expect(() => readKeyVerified(invalid)).toThrow(UNHANDLED);
    // An unknown field 20 (varint 1): fromBinary keeps it among the unknown fields.
    const unknown = Uint8Array.from([...valid, 0xa0, 0x01, 0x01]);
    expect(() => readKeyVerified(unknown)).toThrow(UNHANDLED);
    sameVerified(unknown);
    // Field 11 (latency) as a varint instead of a double.
    sameVerified(Uint8Array.from([0x58, 0x01]));
    for (let cut = 1; cut < valid.length; cut++) sameVerified(valid.subarray(0, cut));
  });

  it("decodes a Buffer slice of a larger buffer", () => {
    const valid = verified(fullVerification);
    const big = Buffer.concat([Buffer.from([1, 2, 3]), valid, Buffer.from([4, 5, 6, 7, 8, 9, 10, 11])]);
    readByHand(KeyVerifiedSchema, readKeyVerified, big.subarray(3, 3 + valid.length));
  });
});

describe("the hand-written RatelimitChecked decoder", () => {
  const full = {
    requestId: "req_multi",
    time: BigInt(Date.UTC(2026, 10, 22, 9)),
    workspaceId: "ws_1",
    namespaceId: "rlns_1",
    identifier: "user_1",
    passed: true,
    limit: 100n,
    remaining: 99n,
    reset: BigInt(Date.UTC(2026, 10, 22, 9, 1)),
    cost: 1n,
    overrideId: "ovr_1",
    latency: 0.125,
    index: 4_000_000_000,
  };

  it("gives fromBinary's message for every field set, and for none, read by hand", () => {
    for (const bytes of [checked(full), checked({}), checked({ ...full, passed: false, index: 1 })]) {
      readByHand(RatelimitCheckedSchema, readRatelimitChecked, bytes);
      sameChecked(bytes);
    }
    for (const v of int64s) {
      const bytes = checked({ time: v, limit: v, remaining: v, reset: v, cost: v });
      readByHand(RatelimitCheckedSchema, readRatelimitChecked, bytes);
    }
    for (const latency of doubles)
      readByHand(RatelimitCheckedSchema, readRatelimitChecked, checked({ latency }));
  });

  it("reads a bool sent as a longer varint as fromBinary does", () => {
    // passed = 0x80 0x01 (128: true) and 0x80 0x00 (0, padded: false).
    sameChecked(Uint8Array.from([0x30, 0x80, 0x01]));
    sameChecked(Uint8Array.from([0x30, 0x80, 0x00]));
    readByHand(RatelimitCheckedSchema, readRatelimitChecked, Uint8Array.from([0x30, 0x80, 0x01]));
  });

  it("leaves non-ASCII, unknown fields and truncated input to fromBinary", () => {
    sameChecked(checked({ ...full, identifier: "ünïcode" }));
    const valid = checked(full);
    sameChecked(Uint8Array.from([...valid, 0xa0, 0x01, 0x01]));
    for (let cut = 1; cut < valid.length; cut++) sameChecked(valid.subarray(0, cut));
  });
});
