import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { describe, expect, it } from "vitest";
import { encodeKeyVerified, KEY_VERIFIED, keyVerified, type Verification } from "./events.ts";

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

describe("keyVerified", () => {
  it("hands an in-process sink the verification's fields, which are KeyVerified's by name, and no bytes", () => {
    const fields: [string, string, object][] = [];
    const sink = {
      publish: () => {
        throw new Error("bytes were written for a sink that takes fields");
      },
      publishFields: (subject: string, id: string, f: object) => void fields.push([subject, id, f]),
      flush: async () => {},
      stats: () => ({ buffered: 0, published: 0, dropped: 0 }),
    };
    keyVerified({ events: sink }, full);
    expect(fields).toEqual([[KEY_VERIFIED, "req_01HXYZABCDEFGHJK:key_1234567890abcdef", full]]);
    // The analytics side reads them by the message's field names.
    expect(Object.keys(full).sort()).toEqual(KeyVerifiedSchema.fields.map((f) => f.localName).sort());
  });

  it("writes the bytes for a sink that takes only bytes (JetStream)", () => {
    const published: [string, string, Uint8Array][] = [];
    const sink = {
      publish: (subject: string, id: string, data: Uint8Array) => void published.push([subject, id, data]),
      flush: async () => {},
      stats: () => ({ buffered: 0, published: 0, dropped: 0 }),
    };
    keyVerified({ events: sink }, full);
    expect(published.map(([s, id, data]) => [s, id, Buffer.from(data)])).toEqual([
      [KEY_VERIFIED, "req_01HXYZABCDEFGHJK:key_1234567890abcdef", Buffer.from(reflected(full))],
    ]);
  });
});
