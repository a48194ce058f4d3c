import { randomBytes } from "node:crypto";
import { crc32 } from "node:zlib";
import bs58 from "bs58";
import { describe, expect, it } from "vitest";
import { generateKey } from "../key-material.ts";
import {
  CHECKSUMMED_KEY_PATTERN,
  checkOf,
  checksummedKey,
  failsChecksum,
  prefixClaimsChecksum,
  withoutMarker,
} from "./key-format.ts";

const ANCHORED = new RegExp(`^${CHECKSUMMED_KEY_PATTERN.source}$`);

describe("the checksummed key format", () => {
  it("ends in the CRC32 of the rest in six base62 digits", () => {
    const key = checksummedKey("sk", "4Yc7eXq2");
    expect(key.startsWith("sk_lkc_4Yc7eXq2")).toBe(true);
    expect(key).toHaveLength("sk_lkc_4Yc7eXq2".length + 6);
    let n = 0;
    for (const c of key.slice(-6))
      n = n * 62 + "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".indexOf(c);
    expect(n).toBe(crc32("sk_lkc_4Yc7eXq2"));
    expect(checkOf("")).toBe("000000");
  });

  it("accepts every generated key, with or without a prefix, and the documented pattern matches each", () => {
    for (const prefix of [undefined, "sk", "acme_live"]) {
      for (let i = 0; i < 200; i++) {
        const { key, start } = generateKey(prefix, 16 + (i % 40), "checksum");
        expect(failsChecksum(key)).toBe(false);
        expect(ANCHORED.test(key)).toBe(true);
        expect(key.startsWith(start)).toBe(true);
      }
    }
  });

  it("refuses a key with any one character changed, dropped or added", () => {
    const { key } = generateKey("sk", 16, "checksum");
    const body = key.slice("sk_lkc_".length);
    let refused = 0;
    let tried = 0;
    for (let i = 0; i < body.length; i++) {
      const at = "sk_lkc_".length + i;
      const swapped = key.slice(0, at) + (key[at] === "a" ? "b" : "a") + key.slice(at + 1);
      const dropped = key.slice(0, at) + key.slice(at + 1);
      const added = `${key.slice(0, at)}z${key.slice(at)}`;
      for (const typo of [swapped, dropped, added]) {
        tried++;
        if (failsChecksum(typo)) refused++;
      }
    }
    // CRC32 catches every single-character error of a string this short.
    expect(refused).toBe(tried);
    expect(failsChecksum("sk_lkc_")).toBe(true);
    expect(failsChecksum("lkc_abc")).toBe(true);
  });

  it("never takes a plain key, of any prefix a plain key may have, for a checksummed one", () => {
    for (const prefix of [undefined, "sk", "lkcx", "xlkc", "a_lkcb", "LKC"]) {
      for (let i = 0; i < 50; i++) {
        const { key } = generateKey(prefix, 16, "plain");
        expect(failsChecksum(key)).toBe(false);
      }
    }
    // Arbitrary strings a migrated key might be: no marker, no claim.
    expect(failsChecksum(`sk_live_${randomBytes(24).toString("base64url").replaceAll("_", "x")}`)).toBe(
      false,
    );
    expect(failsChecksum(bs58.encode(randomBytes(32)))).toBe(false);
  });

  it("keeps prefixes ending in the marker for checksummed keys, and reads a prefix back from a start", () => {
    expect(prefixClaimsChecksum("lkc")).toBe(true);
    expect(prefixClaimsChecksum("acme_lkc")).toBe(true);
    expect(prefixClaimsChecksum("lkcx")).toBe(false);
    expect(prefixClaimsChecksum("xlkc")).toBe(false);
    expect(withoutMarker("sk_lkc")).toBe("sk");
    expect(withoutMarker("lkc")).toBeUndefined();
    expect(withoutMarker("sk")).toBe("sk");
    expect(withoutMarker(undefined)).toBeUndefined();
  });
});
