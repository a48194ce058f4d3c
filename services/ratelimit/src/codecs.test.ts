import type { MessageInitShape } from "@bufbuild/protobuf";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type Caller, CallerSchema, ErrorReason } from "@latchkey/proto/common/v1/common_pb";
import {
  type CheckNamedLimitsRequest,
  CheckNamedLimitsRequestSchema,
  CheckNamedLimitsResponseSchema,
  type LimitBatchRequest,
  LimitBatchRequestSchema,
  LimitBatchResponseSchema,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { UNHANDLED } from "@latchkey/runtime/wire/reader";
import { describe, expect, it } from "vitest";
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
} from "./codecs.ts";

const bytesOf = (b: Uint8Array) => [...b];

/** The hand decoder gives fromBinary's message, or throws fromBinary's error. */
function sameDecoding<T>(decode: (b: Uint8Array) => T, reference: (b: Uint8Array) => T, bytes: Uint8Array) {
  let expected: T | undefined;
  let error: unknown;
  try {
    expected = reference(bytes);
  } catch (err) {
    error = err;
  }
  if (error !== undefined) expect(() => decode(bytes)).toThrow((error as Error).message);
  else expect(decode(bytes)).toStrictEqual(expected);
}

/** The common shapes are read by hand, not handed to fromBinary (else the codec would only be slower). */
function readByHand<T>(read: (b: Uint8Array) => T, reference: (b: Uint8Array) => T, bytes: Uint8Array) {
  expect(read(bytes)).toStrictEqual(reference(bytes));
}
/** Shapes the hand decoder leaves to fromBinary. */
const leftToFromBinary = (read: (b: Uint8Array) => unknown, bytes: Uint8Array) =>
  expect(() => read(bytes)).toThrow(UNHANDLED);

const named = (init: MessageInitShape<typeof CheckNamedLimitsRequestSchema>) =>
  toBinary(CheckNamedLimitsRequestSchema, create(CheckNamedLimitsRequestSchema, init));
const sameNamed = (bytes: Uint8Array) =>
  sameDecoding<CheckNamedLimitsRequest>(
    decodeCheckNamedLimitsRequest,
    (b) => fromBinary(CheckNamedLimitsRequestSchema, b),
    bytes,
  );
const batch = (init: MessageInitShape<typeof LimitBatchRequestSchema>) =>
  toBinary(LimitBatchRequestSchema, create(LimitBatchRequestSchema, init));
const sameBatch = (bytes: Uint8Array) =>
  sameDecoding<LimitBatchRequest>(
    decodeLimitBatchRequest,
    (b) => fromBinary(LimitBatchRequestSchema, b),
    bytes,
  );

const caller = (over: Partial<Caller> = {}) =>
  create(CallerSchema, {
    workspaceId: "ws_1",
    rootKeyId: "rk_1",
    permissions: ["ratelimit.*.limit", "*"],
    ...over,
  });

const extremes = [
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

describe("the hand-written CheckNamedLimitsRequest decoder", () => {
  it("gives fromBinary's message for groups of limits, cost set or not, read by hand", () => {
    const bytes = named({
      groups: [
        {
          workspaceId: "ws_3kQpZ8mVtR2xYc",
          limits: [
            { owner: "key_1", name: "requests", limit: 100n, duration: 60_000n },
            { owner: "id_1", name: "tokens", limit: 5n, duration: 1000n, cost: 0n },
            { owner: "id_1", name: "tokens", limit: 5n, duration: 1000n, cost: 3n },
          ],
        },
        { workspaceId: "ws_2", limits: [] },
        {},
      ],
    });
    readByHand(readCheckNamedLimitsRequest, (b) => fromBinary(CheckNamedLimitsRequestSchema, b), bytes);
    sameNamed(
      named({
        groups: [
          {
            workspaceId: "ws_3kQpZ8mVtR2xYc",
            limits: [
              { owner: "key_1", name: "requests", limit: 100n, duration: 60_000n },
              { owner: "id_1", name: "tokens", limit: 5n, duration: 1000n, cost: 0n },
              { owner: "id_1", name: "tokens", limit: 5n, duration: 1000n, cost: 3n },
            ],
          },
          { workspaceId: "ws_2", limits: [] },
          {},
        ],
      }),
    );
    sameNamed(named({}));
  });

  it("reads int64s over their whole range, negative ones included", () => {
    for (const v of extremes) {
      const bytes = named({
        groups: [{ workspaceId: "w", limits: [{ owner: "o", name: "n", limit: v, duration: v, cost: v }] }],
      });
      readByHand(readCheckNamedLimitsRequest, (b) => fromBinary(CheckNamedLimitsRequestSchema, b), bytes);
      sameNamed(bytes);
    }
  });

  it("leaves non-ASCII and invalid UTF-8, unknown fields, and truncated input to fromBinary", () => {
    sameNamed(named({ groups: [{ workspaceId: "wé 🙂", limits: [{ owner: "ö", name: "n" }] }] }));
    const valid = named({
      groups: [{ workspaceId: "ws_1", limits: [{ owner: "o", name: "n", limit: 1n }] }],
    });
    // Invalid UTF-8 in the workspace id: fromBinary refuses it.
    const invalid = Uint8Array.from(valid);
    invalid[4] = 0xff;
    sameNamed(invalid);
    leftToFromBinary(readCheckNamedLimitsRequest, invalid);
    leftToFromBinary(readCheckNamedLimitsRequest, Uint8Array.from([...valid, 0x48, 0x01]));
    // An unknown field 9 (varint 1) at the end of the request and inside a group.
    sameNamed(Uint8Array.from([...valid, 0x48, 0x01]));
    const inGroup = Uint8Array.from([0x0a, 0x02, 0x48, 0x01]);
    sameNamed(inGroup);
    for (let cut = 1; cut < valid.length; cut++) sameNamed(valid.subarray(0, cut));
  });

  it("decodes a Buffer slice of a larger buffer, as the server hands it", () => {
    const valid = named({
      groups: [{ workspaceId: "ws_1", limits: [{ owner: "o", name: "n", limit: 1n }] }],
    });
    const big = Buffer.concat([Buffer.from([1, 2, 3]), valid, Buffer.from([4])]);
    sameNamed(big.subarray(3, 3 + valid.length));
  });
});

describe("the hand-written LimitBatchRequest decoder", () => {
  const item = (i: number) => ({
    callerIndex: i % 2,
    request: {
      requestId: `req_${i}`,
      check: { namespace: "bench", identifier: `user_${i}`, limit: 10n, duration: 60_000n },
    },
  });

  it("gives fromBinary's message for callers and items as the gateway sends them, read by hand", () => {
    const bytes = batch({
      callers: [caller(), caller({ workspaceId: "ws_2", permissions: [] })],
      items: [0, 1, 2].map(item),
    });
    readByHand(readLimitBatchRequest, (b) => fromBinary(LimitBatchRequestSchema, b), bytes);
    sameBatch(bytes);
    sameBatch(batch({}));
  });

  it("reads every field of an item: caller, cost, metricsDisabled either way, a missing check", () => {
    const bytes = batch({
      callers: [caller()],
      items: [
        { callerIndex: 4_000_000_000, request: { caller: caller(), requestId: "r", metricsDisabled: true } },
        { request: { check: { namespace: "n", identifier: "i", cost: 0n }, metricsDisabled: false } },
        {
          request: { check: { namespace: "n", identifier: "i", limit: -1n, duration: 2n ** 62n, cost: 7n } },
        },
        {},
      ],
    });
    readByHand(readLimitBatchRequest, (b) => fromBinary(LimitBatchRequestSchema, b), bytes);
    sameBatch(bytes);
  });

  it("leaves a message field sent twice (fromBinary merges it), unknown fields and bad input to fromBinary", () => {
    const one = batch({ items: [{ request: { check: { namespace: "a", identifier: "b" } } }] });
    // The same item's request twice: [item tag, len, request tag, len, ..., request tag, len, ...].
    const req = toBinary(
      LimitBatchRequestSchema,
      create(LimitBatchRequestSchema, { items: [{ request: { requestId: "x" } }] }),
    );
    const twice = Uint8Array.from([0x12, req[1]! + one[1]!, ...one.subarray(2), ...req.subarray(2)]);
    sameBatch(twice);
    leftToFromBinary(readLimitBatchRequest, twice);
    sameBatch(Uint8Array.from([...one, 0x1a, 0x00]));
    sameBatch(batch({ callers: [caller({ permissions: ["ratelimit.é.limit"] })] }));
    for (let cut = 1; cut < one.length; cut++) sameBatch(one.subarray(0, cut));
  });
});

describe("the hand-written response encoders", () => {
  it("write toBinary's bytes for CheckNamedLimitsResponse, passed or not, long groups included", () => {
    const res = create(CheckNamedLimitsResponseSchema, {
      groups: [
        { passed: true, results: [{ limit: 100n, remaining: 99n, reset: 1_767_225_660_000n }] },
        { passed: false, results: [{ limit: 0n, remaining: 0n, reset: 1n, exceeded: true }, {}] },
        { results: extremes.map((v) => ({ limit: v, remaining: v, reset: v, exceeded: v > 0n })) },
        {},
      ],
    });
    expect(bytesOf(encodeCheckNamedLimitsResponse(res))).toEqual(
      bytesOf(toBinary(CheckNamedLimitsResponseSchema, res)),
    );
    const empty = create(CheckNamedLimitsResponseSchema, {});
    expect(bytesOf(encodeCheckNamedLimitsResponse(empty))).toEqual([]);
  });

  it("write toBinary's bytes for LimitBatchResponse: answers, errors, empty items, a result over 128 bytes", () => {
    const res = create(LimitBatchResponseSchema, {
      results: [
        {
          result: {
            case: "response",
            value: { result: { success: true, limit: 10n, remaining: 9n, reset: 5n } },
          },
        },
        {
          result: {
            case: "response",
            value: {
              result: {
                namespace: "n".repeat(200),
                identifier: "user é 🙂",
                limit: -5n,
                remaining: 2n ** 60n,
                reset: 1n,
                overrideId: "",
              },
            },
          },
        },
        { result: { case: "response", value: { result: { overrideId: "rlor_1" } } } },
        { result: { case: "response", value: {} } },
        {
          result: {
            case: "error",
            value: {
              code: 3,
              message: "bad",
              detail: { reason: ErrorReason.INVALID_INPUT, violations: [{ location: "/x", message: "m" }] },
            },
          },
        },
        {},
      ],
    });
    expect(bytesOf(encodeLimitBatchResponse(res))).toEqual(bytesOf(toBinary(LimitBatchResponseSchema, res)));
  });

  it("leave messages carrying unknown fields to toBinary, and stay usable after", () => {
    const res = create(CheckNamedLimitsResponseSchema, {
      groups: [{ passed: true, results: [{ limit: 1n }] }],
    });
    res.groups[0]!.results[0]!.$unknown = [{ no: 9, wireType: 0, data: Uint8Array.from([1]) }];
    expect(bytesOf(encodeCheckNamedLimitsResponse(res))).toEqual(
      bytesOf(toBinary(CheckNamedLimitsResponseSchema, res)),
    );
    const plain = create(CheckNamedLimitsResponseSchema, {
      groups: [{ passed: true, results: [{ limit: 2n }] }],
    });
    expect(bytesOf(encodeCheckNamedLimitsResponse(plain))).toEqual(
      bytesOf(toBinary(CheckNamedLimitsResponseSchema, plain)),
    );
  });
});

describe("the client's side: request encoders and response decoders", () => {
  it("write toBinary's bytes for CheckNamedLimitsRequest: cost set to 0 or unset, empty groups, long groups", () => {
    const req = create(CheckNamedLimitsRequestSchema, {
      groups: [
        {
          workspaceId: "ws_1",
          limits: [
            { owner: "key_1", name: "requests", limit: 100n, duration: 60_000n },
            { owner: "id_1", name: "tokens", limit: 5n, duration: 1000n, cost: 0n },
            { owner: "id_ö", name: "n".repeat(300), limit: -1n, duration: 2n ** 63n - 1n, cost: 2n ** 60n },
          ],
        },
        {},
      ],
    });
    expect(bytesOf(encodeCheckNamedLimitsRequest(req))).toEqual(
      bytesOf(toBinary(CheckNamedLimitsRequestSchema, req)),
    );
  });

  it("write toBinary's bytes for LimitBatchRequest: callers, empty permissions, items with and without caller, check, cost, metricsDisabled", () => {
    const req = create(LimitBatchRequestSchema, {
      callers: [caller(), caller({ workspaceId: "", rootKeyId: "", permissions: ["", "é"] })],
      items: [
        {
          callerIndex: 1,
          request: {
            requestId: "req_1",
            check: { namespace: "n", identifier: "i", limit: 5n, duration: 1000n },
          },
        },
        {
          request: {
            caller: caller(),
            check: { namespace: "n", identifier: "i", cost: 0n },
            metricsDisabled: false,
          },
        },
        { callerIndex: 4_000_000_000, request: { metricsDisabled: true } },
        { request: {} },
        {},
      ],
    });
    expect(bytesOf(encodeLimitBatchRequest(req))).toEqual(bytesOf(toBinary(LimitBatchRequestSchema, req)));
  });

  it("read CheckNamedLimitsResponse by hand as fromBinary does, over the whole int64 range", () => {
    const res = create(CheckNamedLimitsResponseSchema, {
      groups: [
        { passed: true, results: [{ limit: 100n, remaining: 99n, reset: 1_767_225_660_000n }] },
        { results: extremes.map((v) => ({ limit: v, remaining: v, reset: v, exceeded: v > 0n })) },
        {},
      ],
    });
    const bytes = toBinary(CheckNamedLimitsResponseSchema, res);
    readByHand(readCheckNamedLimitsResponse, (b) => fromBinary(CheckNamedLimitsResponseSchema, b), bytes);
    expect(decodeCheckNamedLimitsResponse(bytes)).toStrictEqual(
      fromBinary(CheckNamedLimitsResponseSchema, bytes),
    );
    for (let cut = 1; cut < bytes.length; cut++) {
      sameDecoding(
        decodeCheckNamedLimitsResponse,
        (b) => fromBinary(CheckNamedLimitsResponseSchema, b),
        bytes.subarray(0, cut),
      );
    }
  });

  it("read LimitBatchResponse by hand as fromBinary does, leaving items with errors to fromBinary", () => {
    const answers = create(LimitBatchResponseSchema, {
      results: [
        {
          result: {
            case: "response",
            value: { result: { success: true, limit: 10n, remaining: 9n, reset: 5n } },
          },
        },
        {
          result: {
            case: "response",
            value: { result: { namespace: "n", identifier: "i", overrideId: "" } },
          },
        },
        { result: { case: "response", value: { result: { overrideId: "rlor_1", limit: -5n } } } },
        { result: { case: "response", value: {} } },
        {},
      ],
    });
    const bytes = toBinary(LimitBatchResponseSchema, answers);
    readByHand(readLimitBatchResponse, (b) => fromBinary(LimitBatchResponseSchema, b), bytes);
    const withError = create(LimitBatchResponseSchema, {
      results: [
        ...answers.results,
        {
          result: {
            case: "error",
            value: { code: 7, message: "no", detail: { reason: ErrorReason.INSUFFICIENT_PERMISSIONS } },
          },
        },
      ],
    });
    const errorBytes = toBinary(LimitBatchResponseSchema, withError);
    leftToFromBinary(readLimitBatchResponse, errorBytes);
    expect(decodeLimitBatchResponse(errorBytes)).toStrictEqual(
      fromBinary(LimitBatchResponseSchema, errorBytes),
    );
    for (let cut = 1; cut < bytes.length; cut++) {
      sameDecoding(
        decodeLimitBatchResponse,
        (b) => fromBinary(LimitBatchResponseSchema, b),
        bytes.subarray(0, cut),
      );
    }
  });
});
