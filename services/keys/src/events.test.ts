import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { describe, expect, it } from "vitest";
import { encodeKeyVerified, type Verification } from "./events.ts";

const reflected = (v: Verification) =>
  toBinary(
    KeyVerifiedSchema,
    create(KeyVerifiedSchema, { ...v, time: BigInt(v.time), spentCredits: BigInt(v.spentCredits) }),
  );

const full: Verification = {
  requestId: "req_01HXYZABCDEFGHJK",
  time: 1_767_225_600_123,
  workspaceId: "ws_default",
  apiId: "api_1234567890abcdef",
  keyId: "key_1234567890abcdef",
  identityId: "id_42",
  externalId: "user_ünïcødé_🔑",
  outcome: "USAGE_EXCEEDED",
  tags: ["path=/v1/things", "", "région=eu"],
  spentCredits: 1_000_000_000_000,
  latency: 0.123,
};

describe("encodeKeyVerified", () => {
  it("writes the bytes toBinary writes, every field set (non-ASCII, empty tag, large numbers)", () => {
    expect(Buffer.from(encodeKeyVerified(full))).toEqual(Buffer.from(reflected(full)));
    expect(fromBinary(KeyVerifiedSchema, encodeKeyVerified(full))).toMatchObject({
      externalId: "user_ünïcødé_🔑",
      tags: ["path=/v1/things", "", "région=eu"],
      spentCredits: 1_000_000_000_000n,
    });
  });

  it("leaves defaults out as toBinary does", () => {
    const empty: Verification = {
      requestId: "",
      time: 0,
      workspaceId: "ws_1",
      apiId: "",
      keyId: "",
      identityId: "",
      externalId: "",
      outcome: "NOT_FOUND",
      tags: [],
      spentCredits: 0,
      latency: 0,
    };
    expect(Buffer.from(encodeKeyVerified(empty))).toEqual(Buffer.from(reflected(empty)));
  });

  it("writes long strings and any int64 as toBinary does", () => {
    const long: Verification = {
      ...full,
      requestId: "r".repeat(300),
      tags: Array.from({ length: 40 }, (_, i) => `tag-${i}-${"é".repeat(i * 5)}`),
      time: Number.MAX_SAFE_INTEGER,
      spentCredits: -5,
    };
    expect(Buffer.from(encodeKeyVerified(long))).toEqual(Buffer.from(reflected(long)));
  });
});
