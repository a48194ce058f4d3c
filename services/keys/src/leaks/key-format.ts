import { crc32 } from "node:zlib";

/**
 * The checksummed key format (an API's `keyFormat: "checksum"`, Latchkey's addition), so that a
 * secret scanner can recognise Latchkey keys and verification can refuse a mistyped one without
 * asking the key cache or PostgreSQL:
 *
 *     [<prefix>_]lkc_<random><check>
 *
 * `<random>` is the base58 of the key's random bytes (as a plain key's), `<check>` the CRC32 of
 * everything before it (UTF-8), in base62 (0-9, A-Z, a-z), left-padded with "0" to 6 characters.
 * The literal `lkc` segment marks the format: a plain key's last segment is base58 alone and never
 * follows a segment `lkc` (createKey refuses such a prefix for a plain key), so a plain key is never
 * taken for a checksummed one. docs/api.md gives the regular expression scanners match.
 */
export const CHECKSUM_MARKER = "lkc";

/** What keys of an API look like: `plain` (Unkey's) or `checksum`. */
export type KeyFormat = "plain" | "checksum";
export const KEY_FORMATS: readonly KeyFormat[] = ["plain", "checksum"];

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const CHECK_LENGTH = 6;

/** The 6-character check of `body`: CRC32 in base62, 62^6 being more than 2^32. */
export function checkOf(body: string): string {
  let n = crc32(body);
  let out = "";
  for (let i = 0; i < CHECK_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** `random` (base58) as a checksummed key under `prefix`. */
export function checksummedKey(prefix: string | undefined, random: string): string {
  const body = `${prefix ? `${prefix}_` : ""}${CHECKSUM_MARKER}_${random}`;
  return body + checkOf(body);
}

/**
 * Whether `key` claims the checksummed format (its last segment follows a segment `lkc`) and its
 * check does not match: such a key cannot exist, and is refused before any lookup. A key that does
 * not claim the format answers false whatever it holds, so plain keys verify as they always did.
 * On the hot path: a plain key costs one lastIndexOf and a comparison.
 */
export function failsChecksum(key: string): boolean {
  const sep = key.lastIndexOf("_");
  if (sep < CHECKSUM_MARKER.length) return false;
  const start = sep - CHECKSUM_MARKER.length;
  if (start > 0 && key.charCodeAt(start - 1) !== 95 /* _ */) return false;
  if (!key.startsWith(CHECKSUM_MARKER, start)) return false;
  // The random part must hold at least one character besides the check.
  if (key.length - sep - 1 <= CHECK_LENGTH) return true;
  const cut = key.length - CHECK_LENGTH;
  return checkOf(key.slice(0, cut)) !== key.slice(cut);
}

/** Whether a prefix would make plain keys look checksummed (its last segment is the marker). */
export function prefixClaimsChecksum(prefix: string): boolean {
  return prefix === CHECKSUM_MARKER || prefix.endsWith(`_${CHECKSUM_MARKER}`);
}

/** A start's prefix without the checksummed format's marker: "sk_lkc" is "sk", "lkc" none. */
export function withoutMarker(prefix: string | undefined): string | undefined {
  if (prefix === undefined || prefix === CHECKSUM_MARKER) return undefined;
  return prefix.endsWith(`_${CHECKSUM_MARKER}`) ? prefix.slice(0, -CHECKSUM_MARKER.length - 1) : prefix;
}

/**
 * The regular expression (docs/api.md) a scanner matches checksummed keys with, for a prefix of
 * up to 16 letters, digits or underscores; its check is then confirmed with checkOf.
 */
export const CHECKSUMMED_KEY_PATTERN = /(?:[A-Za-z0-9_]{1,16}_)?lkc_[1-9A-HJ-NP-Za-km-z]{16,}[0-9A-Za-z]{6}/;
