import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";

/**
 * Short ASCII strings (ids, names, permission slugs: nearly every string
 * Latchkey's processes send each other) are converted in JavaScript instead of
 * through TextEncoder/TextDecoder, whose call into C++ costs more than the
 * conversion for a few dozen bytes; anything longer or not ASCII goes to them
 * as before. protobuf-es converts every string field through these two
 * functions, so short fields are most of what it converts (what this saves:
 * docs/architecture.md, Measured settings).
 */
const SHORT = 64;
const base = getTextEncoding();

export function encodeUtf8(text: string): Uint8Array<ArrayBuffer> {
  const n = text.length;
  if (n > SHORT) return base.encodeUtf8(text);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c > 0x7f) return base.encodeUtf8(text);
    out[i] = c;
  }
  return out;
}

export function decodeUtf8(bytes: Uint8Array, strict?: boolean): string {
  const n = bytes.length;
  if (n > SHORT) return base.decodeUtf8(bytes, strict);
  let text = "";
  for (let i = 0; i < n; i++) {
    const b = bytes[i]!;
    if (b > 0x7f) return base.decodeUtf8(bytes, strict);
    text += String.fromCharCode(b);
  }
  return text;
}

configureTextEncoding({ checkUtf8: base.checkUtf8, encodeUtf8, decodeUtf8 });
