/**
 * Limits every request body is held to before it is parsed or stored. Each is listed in
 * gateway/README.md (Limits).
 */

/**
 * Objects and arrays may nest at most this deep in a request body that may hold JSON of any shape
 * (meta), the body itself counting as one level.
 */
export const MAX_DEPTH = 32;

/** The largest `meta` stored, in bytes of its JSON; it is returned by every verification of its key. */
export const MAX_META_BYTES = 64 * 1024;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;

// One scan at a time (the event loop runs one), so its per-level state is allocated once.
const isObject = new Uint8Array(MAX_DEPTH);
const index = new Uint32Array(MAX_DEPTH);
const expectKey = new Uint8Array(MAX_DEPTH);
const keyStart = new Int32Array(MAX_DEPTH);
const keyEnd = new Int32Array(MAX_DEPTH);

/**
 * The JSON pointer (under /body) of the first object or array of a JSON text nested deeper than
 * MAX_DEPTH, or undefined when none is. Checked on the bytes before JSON.parse, without recursion:
 * a deeper value would overflow the stack of a recursive JSON.stringify, or a store's JSON parser.
 * A text with at most MAX_DEPTH brackets cannot nest deeper, and is answered after a few indexOf
 * calls; only a longer one is scanned, byte by byte outside strings. Malformed JSON is left to
 * JSON.parse.
 */
export function tooDeepAt(raw: Buffer): string | undefined {
  if (openings(raw) <= MAX_DEPTH) return undefined;
  let depth = 0;
  const n = raw.length;
  for (let i = 0; i < n; i++) {
    const b = raw[i];
    if (b === QUOTE) {
      const end = stringEnd(raw, i);
      const level = depth - 1;
      if (level >= 0 && expectKey[level] === 1) {
        expectKey[level] = 0;
        keyStart[level] = i;
        keyEnd[level] = end + 1;
      }
      i = end;
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (depth === MAX_DEPTH) return pointer(raw, depth);
      const object = b === OPEN_OBJECT ? 1 : 0;
      isObject[depth] = object;
      expectKey[depth] = object;
      index[depth] = 0;
      keyStart[depth] = 0;
      keyEnd[depth] = 0;
      depth++;
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      if (depth > 0) depth--;
    } else if (b === COMMA && depth > 0) {
      const level = depth - 1;
      if (isObject[level] === 1) expectKey[level] = 1;
      else index[level]!++;
    }
  }
  return undefined;
}

/** How many `{` and `[` the text holds, counted up to one past MAX_DEPTH (strings included: an overestimate). */
function openings(raw: Buffer): number {
  let n = 0;
  for (let i = raw.indexOf(OPEN_OBJECT); i !== -1 && n <= MAX_DEPTH; i = raw.indexOf(OPEN_OBJECT, i + 1)) n++;
  for (let i = raw.indexOf(OPEN_ARRAY); i !== -1 && n <= MAX_DEPTH; i = raw.indexOf(OPEN_ARRAY, i + 1)) n++;
  return n;
}

/** The index of the quote that closes the string opened at `at`, or the text's end when none does. */
function stringEnd(raw: Buffer, at: number): number {
  for (let q = raw.indexOf(QUOTE, at + 1); q !== -1; q = raw.indexOf(QUOTE, q + 1)) {
    // A quote after an odd run of backslashes is escaped.
    let slashes = 0;
    while (raw[q - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return q;
  }
  return raw.length;
}

/** Where the container opened inside the `depth` levels of the scan sits: one segment per level. */
function pointer(raw: Buffer, depth: number): string {
  let at = "/body";
  for (let level = 0; level < depth; level++) {
    if (isObject[level] === 0) {
      at += `/${index[level]}`;
      continue;
    }
    const text = raw.toString("utf8", keyStart[level], keyEnd[level]);
    let key: string;
    try {
      key = JSON.parse(text) as string;
    } catch {
      key = text.slice(1, -1);
    }
    at += `/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`;
  }
  return at;
}
