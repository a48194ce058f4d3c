import type { RatelimitConfig } from "@latchkey/proto/common/v1/common_pb";
import { type Credits, type Refill, RefillInterval } from "@latchkey/proto/keys/v1/keys_pb";
import { invalidInput } from "@latchkey/runtime";
import type { KeyRatelimitRecord, RefillRecord } from "../store/keys-store.ts";

export const MAX_EXPIRES = 4_102_444_800_000;

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

export function validCredits(
  credits: Credits | undefined,
  at: string,
): {
  remaining: number | null;
  refill: RefillRecord | null;
} {
  if (!credits) return { remaining: null, refill: null };
  const remaining = credits.remaining === undefined ? null : int64(credits.remaining, `${at}/remaining`);
  const refill = credits.refill;
  if (!refill) return { remaining, refill: null };
  if (remaining === null) {
    throw invalidInput(
      `${at}/remaining`,
      "remaining must be set when refill is set",
      "Give the starting balance in credits.remaining.",
    );
  }
  return { remaining, refill: validRefill(refill, `${at}/refill`) };
}

/** A refill schedule; monthly defaults to the 1st (as docs/api.md says; Unkey requires refillDay). */
export function validRefill(refill: Refill, at: string): RefillRecord {
  const amount = int64(refill.amount, `${at}/amount`, 1);
  switch (refill.interval) {
    case RefillInterval.DAILY:
      if (refill.refillDay !== undefined) {
        throw invalidInput(
          `${at}/refillDay`,
          "refillDay applies only to monthly refills",
          "Remove refillDay or use interval monthly.",
        );
      }
      return { interval: "daily", amount, day: null };
    case RefillInterval.MONTHLY: {
      const day = refill.refillDay ?? 1;
      if (!Number.isInteger(day) || day < 1 || day > 31) {
        throw invalidInput(`${at}/refillDay`, `refillDay must be between 1 and 31, got ${day}`);
      }
      return { interval: "monthly", amount, day };
    }
    case RefillInterval.UNSPECIFIED:
      throw invalidInput(`${at}/interval`, "interval must be daily or monthly");
    default: {
      const never: never = refill.interval;
      throw invalidInput(`${at}/interval`, `unknown interval ${never}`);
    }
  }
}

export function validExpires(value: bigint, at: string): number {
  return int64(value, at, 0, MAX_EXPIRES);
}

export function validPermissions(permissions: readonly string[], at: string): string[] {
  permissions.forEach((p, i) => {
    if (p === "") throw invalidInput(`${at}/permissions/${i}`, "a permission must not be empty");
  });
  return [...new Set(permissions)];
}

/** Named limits of a key: names unique, limit at least 1, duration at least 1000 ms. */
export function validRatelimits(
  ratelimits: readonly RatelimitConfig[],
  at: string,
): Omit<KeyRatelimitRecord, "id">[] {
  const names = new Set<string>();
  return ratelimits.map((r, i) => {
    if (r.name === "") throw invalidInput(`${at}/ratelimits/${i}/name`, "a rate limit needs a name");
    if (names.has(r.name)) {
      throw invalidInput(
        `${at}/ratelimits/${i}/name`,
        `rate limit name '${r.name}' is used twice`,
        "Give each limit its own name.",
      );
    }
    names.add(r.name);
    return {
      name: r.name,
      limit: int64(r.limit, `${at}/ratelimits/${i}/limit`, 1),
      duration: int64(r.duration, `${at}/ratelimits/${i}/duration`, 1000),
      autoApply: r.autoApply,
    };
  });
}

const SLUG = /^[a-zA-Z0-9_:\-.*]+$/;

export function validKeyId(keyId: string): string {
  if (keyId === "") throw invalidInput("/keyId", "keyId is required");
  return keyId;
}

/** Permission slugs of keys.add/remove/setPermissions: min to 1000, each 1 to 128 of [a-zA-Z0-9_:-.*]; each once. */
export function validSlugs(slugs: readonly string[], min: 0 | 1): string[] {
  if (slugs.length < min) throw invalidInput("/permissions", "permissions must name at least one permission");
  if (slugs.length > 1000) {
    throw invalidInput("/permissions", `at most 1000 permissions are allowed, got ${slugs.length}`);
  }
  slugs.forEach((slug, i) => {
    if (slug.length === 0 || slug.length > 128) {
      throw invalidInput(`/permissions/${i}`, "a permission slug must be 1 to 128 characters long");
    }
    if (!SLUG.test(slug)) {
      throw invalidInput(
        `/permissions/${i}`,
        `'${slug}' is not a valid permission slug: use letters, digits and _ : - . *`,
        "Use ^[a-zA-Z0-9_:\\-.*]+$.",
      );
    }
  });
  return [...new Set(slugs)];
}

/** Role names of keys.add/remove/setRoles: min to 100, each 1 to 128 characters; each once. */
export function validRoleNames(names: readonly string[], min: 0 | 1): string[] {
  if (names.length < min) throw invalidInput("/roles", "roles must name at least one role");
  if (names.length > 100) throw invalidInput("/roles", `at most 100 roles are allowed, got ${names.length}`);
  names.forEach((name, i) => {
    if (name.length === 0 || name.length > 128) {
      throw invalidInput(`/roles/${i}`, "a role name must be 1 to 128 characters long");
    }
  });
  return [...new Set(names)];
}
