import { hash, randomBytes } from "node:crypto";

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** A resource id such as key_3ZbLk9..., 16 random base58 characters after the prefix. */
export function newId(prefix: string): string {
  const bytes = randomBytes(16);
  let out = `${prefix}_`;
  // 58 * 4 = 232 < 256: rejecting bytes >= 232 keeps every character equally likely.
  for (let i = 0; out.length < prefix.length + 17; i++) {
    if (i === bytes.length) {
      bytes.set(randomBytes(16));
      i = 0;
    }
    const b = bytes[i]!;
    if (b < 232) out += ALPHABET[b % 58];
  }
  return out;
}

/**
 * The stored form of a key: standard padded base64 of SHA-256 of the full key
 * string (as Unkey). Once per verification: the one-shot crypto.hash costs a
 * third of createHash().update().digest().
 */
export function hashKey(plaintext: string): string {
  return hash("sha256", plaintext, "base64");
}
