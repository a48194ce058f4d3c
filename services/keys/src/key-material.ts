import { randomBytes } from "node:crypto";
import { hashKey } from "@latchkey/runtime";
import bs58 from "bs58";
import { CHECKSUM_MARKER, checksummedKey, type KeyFormat } from "./leaks/key-format.ts";

export interface KeyMaterial {
  /** The full key string: shown once, never stored. */
  key: string;
  /** What is stored: standard base64 of SHA-256 of `key`. */
  hash: string;
  /** Kept for display: the prefix and the first 4 random characters. */
  start: string;
}

/**
 * A new key: prefix + "_" + base58 of byteLength random bytes, or the bare base58 without a prefix;
 * in the checksummed format (leaks/key-format.ts) the same with its marker and check.
 */
export function generateKey(
  prefix: string | undefined,
  byteLength: number,
  format: KeyFormat = "plain",
): KeyMaterial {
  const random = bs58.encode(randomBytes(byteLength));
  if (format === "checksum") {
    const key = checksummedKey(prefix, random);
    const head = `${prefix ? `${prefix}_` : ""}${CHECKSUM_MARKER}_`;
    return { key, hash: hashKey(key), start: head + random.slice(0, 4) };
  }
  const head = prefix ? `${prefix}_` : "";
  const key = head + random;
  return { key, hash: hashKey(key), start: head + random.slice(0, 4) };
}
