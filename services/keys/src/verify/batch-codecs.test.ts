import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { VerifyKeyBatchRequestSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { UNHANDLED } from "@latchkey/runtime/wire/reader";
import { describe, expect, it } from "vitest";
import { decodeVerifyKeyBatchRequest, readVerifyKeyBatchRequest } from "./batch-codecs.ts";

const batch = (init: MessageInitShape<typeof VerifyKeyBatchRequestSchema>) =>
  toBinary(VerifyKeyBatchRequestSchema, create(VerifyKeyBatchRequestSchema, init));
const reference = (bytes: Uint8Array) => fromBinary(VerifyKeyBatchRequestSchema, bytes);
const caller = (init: MessageInitShape<typeof CallerSchema> = {}) =>
  create(CallerSchema, {
    workspaceId: "ws_1",
    rootKeyId: "root_1",
    permissions: ["api.*.verify_key"],
    ...init,
  });

/** The decoder gives fromBinary's message, or throws fromBinary's error. */
function same(bytes: Uint8Array) {
  let expected: unknown;
  let error: unknown;
  try {
    expected = reference(bytes);
  } catch (err) {
    error = err;
  }
  if (error !== undefined) expect(() => decodeVerifyKeyBatchRequest(bytes)).toThrow((error as Error).message);
  else expect(decodeVerifyKeyBatchRequest(bytes)).toStrictEqual(expected);
}

/** Read by hand, not handed over (else the codec would only be slower). */
const byHand = (bytes: Uint8Array) =>
  expect(readVerifyKeyBatchRequest(bytes)).toStrictEqual(reference(bytes));
const handedOver = (bytes: Uint8Array) => expect(() => readVerifyKeyBatchRequest(bytes)).toThrow(UNHANDLED);

describe("the hand-written VerifyKeyBatchRequest decoder", () => {
  it("reads a batch as the gateway sends it, by hand, as fromBinary does", () => {
    const bytes = batch({
      callers: [caller(), caller({ workspaceId: "ws_2", permissions: [] })],
      items: [0, 1, 2].map((i) => ({
        callerIndex: i % 2,
        request: {
          key: `lk_${i}`,
          permissions: "documents.read AND documents.write",
          requestId: `req_${i}`,
        },
      })),
    });
    byHand(bytes);
    byHand(batch({}));
  });

  it("reads every field of a request: caller, cost, tags, rate limits, permissions, migration id", () => {
    const bytes = batch({
      callers: [caller()],
      items: [
        {
          callerIndex: 4_000_000_000,
          request: {
            caller: caller({ rootKeyId: "" }),
            key: "lk_x",
            cost: 0n,
            tags: ["path=/v1", "", "region=eu"],
            ratelimits: [
              { name: "requests" },
              { name: "tokens", cost: 5n, limit: -1n, duration: 2n ** 62n },
              { name: "zero", cost: 0n, limit: 0n, duration: 0n },
            ],
            permissions: "",
            migrationId: "m_1",
            requestId: "req_x",
          },
        },
        { request: { key: "lk_y", cost: 9_007_199_254_740_993n } },
        { request: {} },
        {},
      ],
    });
    byHand(bytes);
    const decoded = decodeVerifyKeyBatchRequest(bytes);
    expect(decoded.items[0]?.request?.ratelimits[1]).toMatchObject({
      cost: 5n,
      limit: -1n,
      duration: 2n ** 62n,
    });
    expect(decoded.items[1]?.request?.cost).toBe(9_007_199_254_740_993n);
    expect(decoded.items[1]?.request).not.toHaveProperty("permissions");
  });

  it("reads non-ASCII strings by hand, and hands invalid UTF-8, unknown fields, a request sent twice and bad input to fromBinary", () => {
    const one = batch({ items: [{ request: { key: "lk_a" } }] });
    const nonAscii = batch({ items: [{ request: { key: "lk_é", tags: ["ü 🙂"] } }] });
    byHand(nonAscii);
    same(nonAscii);
    // "lk_é" with its é cut to one byte: not UTF-8, which fromBinary refuses for a proto3 string.
    const invalid = Uint8Array.from(nonAscii);
    invalid[invalid.indexOf(0xc3) + 1] = 0x28;
    handedOver(invalid);
    same(invalid);
    const unknown = Uint8Array.from([...one, 0x1a, 0x00]);
    handedOver(unknown);
    same(unknown);
    // The same item's request twice: fromBinary merges the two.
    const other = batch({ items: [{ request: { requestId: "r" } }] });
    const twice = Uint8Array.from([0x12, one[1]! + other[1]!, ...one.subarray(2), ...other.subarray(2)]);
    expect(reference(twice).items[0]?.request).toMatchObject({ key: "lk_a", requestId: "r" });
    handedOver(twice);
    same(twice);
    for (let cut = 1; cut < one.length; cut++) same(one.subarray(0, cut));
    same(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]));
  });

  it("decodes a Buffer slice of a larger buffer, as the server hands it", () => {
    const bytes = batch({ callers: [caller()], items: [{ request: { key: "lk_slice", tags: ["t"] } }] });
    const big = Buffer.concat([Buffer.from([1, 2, 3]), Buffer.from(bytes), Buffer.from([4, 5])]);
    const slice = big.subarray(3, 3 + bytes.length);
    expect(decodeVerifyKeyBatchRequest(slice)).toStrictEqual(reference(bytes));
  });
});
