/**
 * What the caches count of the strings they hold (key-cache.ts,
 * identity-cache.ts): an upper bound from a string's length, without reading
 * its characters (meta can be large). V8 keeps a string's characters in one
 * byte each, or two when any is beyond Latin-1, behind a header of 16 bytes
 * rounded up to 8.
 */
export const STRING_BYTES = 24;

/** A string's bytes at most; nothing for null or undefined. */
export function textBytes(s: string | null | undefined): number {
  return s === null || s === undefined ? 0 : STRING_BYTES + 2 * s.length;
}
