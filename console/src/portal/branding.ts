// A portal's branding is written by whoever holds a root key with the portal permission, and read here by
// the end users of that workspace's product: each value is checked before it reaches the page, and nothing
// of it is ever written as HTML or CSS text (Preact sets text and attributes; the colour goes through the
// CSSOM as one custom property).

/** The colour the portal's buttons and band use when the portal names none, or none that is valid. */
export const DEFAULT_ACCENT = "#1d4ed8";
/** A title longer than this is cut: it is a heading, not a paragraph. */
export const MAX_TITLE = 120;

/** `#rgb` or `#rrggbb`, lower-cased as `#rrggbb`; anything else (names, functions, `;`) is undefined. */
export function accentColor(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(value.trim());
  if (!m) return undefined;
  const hex = m[1]!.toLowerCase();
  return hex.length === 3 ? `#${[...hex].map((c) => c + c).join("")}` : `#${hex}`;
}

/** An https URL for the logo (the page's CSP lets images load from https: only); else undefined. */
export function logoUrl(value: unknown): string | undefined {
  const url = absolute(value);
  return url?.protocol === "https:" ? url.href : undefined;
}

/**
 * Where the return link goes: an http(s) URL only, so no `javascript:` or `data:` link can be made of it.
 * http is allowed, as for a backend on localhost; the link is the backend's own choice, per session.
 */
export function returnUrl(value: unknown): string | undefined {
  const url = absolute(value);
  return url && (url.protocol === "https:" || url.protocol === "http:") ? url.href : undefined;
}

/** The title as text, trimmed and cut to MAX_TITLE characters; `fallback` when there is none. */
export function title(value: unknown, fallback: string): string {
  if (typeof value !== "string") return fallback;
  // Control characters (a newline in a heading, a bidi override) are dropped.
  const text = value.replace(/[\p{Cc}\u202a-\u202e\u2066-\u2069]/gu, "").trim();
  if (text === "") return fallback;
  return [...text].length > MAX_TITLE ? `${[...text].slice(0, MAX_TITLE - 1).join("")}…` : text;
}

function absolute(value: unknown): URL | undefined {
  if (typeof value !== "string" || value.length > 2048) return undefined;
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/** WCAG's relative luminance of `#rrggbb`. */
function luminance(hex: string): number {
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

/** The contrast ratio of two `#rrggbb` colours (1 to 21). */
export function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/**
 * The text colour on the accent: white or black, whichever contrasts more. One of the two always
 * reaches 4.5:1 (WCAG AA for text), whatever colour the portal chose.
 */
export function textOn(accent: string): string {
  return contrast(accent, "#ffffff") >= contrast(accent, "#000000") ? "#ffffff" : "#000000";
}
