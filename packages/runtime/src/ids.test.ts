import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hashKey, newId } from "./ids.ts";

describe("hashKey", () => {
  it("is standard padded base64 of SHA-256 of the key's UTF-8 bytes, as Unkey stores keys", () => {
    // printf 'lk_test_ü' | openssl dgst -sha256 -binary | base64
    expect(hashKey("lk_test_ü")).toBe("zEa4Z+hHbtWbGKN2aXqSDlz5u8ziluUgUtiFELINz3Q=");
    for (const key of ["", "a", "x".repeat(1_000), "lk_3ZbLk9mQ"]) {
      expect(hashKey(key)).toBe(createHash("sha256").update(key, "utf8").digest("base64"));
    }
  });
});

describe("newId", () => {
  it("is the prefix and 16 base58 characters, different every time", () => {
    const ids = new Set(Array.from({ length: 1_000 }, () => newId("key")));
    expect(ids.size).toBe(1_000);
    for (const id of ids) expect(id).toMatch(/^key_[1-9A-HJ-NP-Za-km-z]{16}$/);
  });
});
