import { invalidInput } from "@latchkey/runtime";

/** A proto int64 as a JS number, refusing what a number cannot hold exactly or what lies outside [min, max]. */
export function int64(value: bigint, location: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (value < BigInt(min) || value > BigInt(max)) {
    throw invalidInput(location, `${location.slice(1)} must be between ${min} and ${max}, got ${value}`);
  }
  return Number(value);
}

/** JSON text of an object, as the gateway forwards `meta`; anything else is refused. */
export function metaObject(json: string | undefined, location: string): string | null {
  if (json === undefined) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw invalidInput(location, "meta must be a JSON object");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw invalidInput(location, "meta must be a JSON object");
  }
  return json;
}
