import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { getTextEncoding } from "@bufbuild/protobuf/wire";
import { ApiSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { decodeUtf8, encodeUtf8 } from "./text-encoding.ts";

const samples = [
  "",
  "key_3ZdQk9",
  "documents.read AND documents.write",
  "naïve",
  "✓ done",
  "emoji 🔑 key",
  "x".repeat(64),
  "x".repeat(65),
  `${"a".repeat(63)}é`,
  "\u007f\u0000",
];

describe("text encoding for protobuf strings", () => {
  it.each(samples)("encodes %j to the same bytes as TextEncoder and decodes them back", (text) => {
    const bytes = encodeUtf8(text);
    expect([...bytes]).toEqual([...new TextEncoder().encode(text)]);
    expect(decodeUtf8(bytes)).toBe(text);
  });

  it("is what protobuf-es uses once the runtime is loaded, and messages round-trip", () => {
    expect(getTextEncoding().encodeUtf8).toBe(encodeUtf8);
    for (const name of samples) {
      const api = create(ApiSchema, { id: "api_1", name });
      expect(fromBinary(ApiSchema, toBinary(ApiSchema, api)).name).toBe(name);
    }
  });

  it("replaces invalid UTF-8 as TextDecoder does, and refuses it when strict", () => {
    const invalid = new Uint8Array([0x61, 0xff, 0x62]);
    expect(decodeUtf8(invalid)).toBe(new TextDecoder().decode(invalid));
    expect(() => decodeUtf8(invalid, true)).toThrow();
  });
});
