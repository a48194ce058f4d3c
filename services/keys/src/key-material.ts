import { randomBytes } from "node:crypto";
import { hashKey } from "@latchkey/runtime";
import bs58 from "bs58";

export interface KeyMaterial {
  /** The full key string: shown once, never stored. */
  key: string;
  /** What is stored: standard base64 of SHA-256 of `key`. */
  hash: string;
  /** Kept for display: the prefix and the first 4 random characters. */
  start: string;
}

/** A new key: prefix + "_" + base58 of byteLength random bytes, or the bare base58 without a prefix. */
export function generateKey(prefix: string | undefined, byteLength: number): KeyMaterial {
  const random = bs58.encode(randomBytes(byteLength));
  const head = prefix ? `${prefix}_` : "";
  const key = head + random;
  return { key, hash: hashKey(key), start: head + random.slice(0, 4) };
}
