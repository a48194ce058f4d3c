import type { PageRequest, RatelimitConfig } from "@latchkey/proto/common/v1/common_pb";
import { invalidInput, newId } from "@latchkey/runtime";
import type { RatelimitRecord } from "./store/identity-store.ts";

/**
 * Narrowing shared by the RPCs: each answers a value with no holes or throws
 * INVALID_INPUT naming the public field (limits from docs/limits.md and the
 * Unkey's schema).
 */

const EXTERNAL_ID = /^[a-zA-Z0-9_.-]+$/;
const SLUG = /^[a-zA-Z0-9_:\-.*]+$/;

export const MAX_RATELIMITS = 50;
export const MAX_SLUGS = 1000;
export const MAX_NAMES = 1000;
export const DEFAULT_PAGE_SIZE = 100;

function text(value: string, location: string, min: number, max: number): string {
  if (value.length < min || value.length > max) {
    const what = location.split("/").filter(Boolean).join(".");
    throw invalidInput(
      location,
      min > 0 && value.length === 0
        ? `${what} must not be empty`
        : `${what} must be ${min} to ${max} characters long, got ${value.length}`,
    );
  }
  return value;
}

export function externalIdOf(value: string, location = "/externalId"): string {
  text(value, location, 1, 255);
  if (!EXTERNAL_ID.test(value)) {
    throw invalidInput(
      location,
      "externalId may hold only letters, digits, '_', '.' and '-'",
      "Use ^[a-zA-Z0-9_.-]+$.",
    );
  }
  return value;
}

/** An identity, permission or role named by id or by its other identifier. */
export function referenceOf(value: string, location: string): string {
  return text(value, location, 1, 255);
}

/** JSON text of an object, as the gateway forwards `meta`; anything else is refused. */
export function metaOf(json: string, location = "/meta"): string {
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

function int64(value: bigint, location: string, min: number): number {
  if (value < BigInt(min) || value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw invalidInput(location, `${location.split("/").at(-1)} must be at least ${min}, got ${value}`);
  }
  return Number(value);
}

/** Rate limits with fresh ids (a store keeps the old id of a name already there). */
export function ratelimitsOf(
  configs: readonly RatelimitConfig[],
  location = "/ratelimits",
): RatelimitRecord[] {
  if (configs.length > MAX_RATELIMITS) {
    throw invalidInput(location, `at most ${MAX_RATELIMITS} rate limits are allowed, got ${configs.length}`);
  }
  const seen = new Set<string>();
  return configs.map((r, i) => {
    const at = `${location}/${i}`;
    if (r.name === "") throw invalidInput(`${at}/name`, "a rate limit needs a name");
    text(r.name, `${at}/name`, 1, 128);
    if (seen.has(r.name)) {
      throw invalidInput(
        `${at}/name`,
        `rate limit name '${r.name}' is used twice`,
        "Give each limit its own name.",
      );
    }
    seen.add(r.name);
    return {
      id: newId("rl"),
      name: r.name,
      limit: int64(r.limit, `${at}/limit`, 1),
      duration: int64(r.duration, `${at}/duration`, 1000),
      autoApply: r.autoApply,
    };
  });
}

export function slugOf(value: string, location: string): string {
  text(value, location, 1, 128);
  if (!SLUG.test(value)) {
    throw invalidInput(
      location,
      `'${value}' is not a valid permission slug: use letters, digits and _ : - . *`,
      "Use ^[a-zA-Z0-9_:\\-.*]+$.",
    );
  }
  return value;
}

/** Valid slugs, each once, in the order first given. */
export function slugsOf(values: readonly string[], location = "/permissions"): string[] {
  if (values.length > MAX_SLUGS) {
    throw invalidInput(location, `at most ${MAX_SLUGS} permissions are allowed, got ${values.length}`);
  }
  return [...new Set(values.map((v, i) => slugOf(v, `${location}/${i}`)))];
}

/** Non-empty strings, each once, in the order first given. */
export function distinctOf(values: readonly string[], location: string, max = MAX_NAMES): string[] {
  if (values.length > max)
    throw invalidInput(location, `at most ${max} items are allowed, got ${values.length}`);
  return [...new Set(values.map((v, i) => text(v, `${location}/${i}`, 1, 255)))];
}

export function descriptionOf(value: string | undefined, location = "/description"): string | null {
  if (value === undefined) return null;
  return text(value, location, 0, 512);
}

export function nameOf(value: string, location: string, max: number): string {
  if (value.trim() === "") throw invalidInput(location, `${location.slice(1)} must not be empty`);
  return text(value, location, 1, max);
}

export interface Page {
  limit: number;
  after: string | undefined;
  search: string | undefined;
}

/** limit 1 to 100 (0 means the default, 100), cursor at most 1024 characters, search at most 256. */
export function pageOf(page: PageRequest | undefined, search: string): Page {
  const limit = page?.limit ?? 0;
  if (limit < 0 || limit > 100) throw invalidInput("/limit", `limit must be between 1 and 100, got ${limit}`);
  const cursor = page?.cursor ?? "";
  if (cursor.length > 1024) throw invalidInput("/cursor", "cursor must be at most 1024 characters long");
  if (search.length > 256) throw invalidInput("/search", "search must be at most 256 characters long");
  return {
    limit: limit === 0 ? DEFAULT_PAGE_SIZE : limit,
    after: cursor || undefined,
    search: search || undefined,
  };
}

/** The page answer: read one more row than asked to learn whether more follow. */
export function pageResult<T extends { id: string }>(
  rows: T[],
  page: Page,
): { items: T[]; cursor: string; hasMore: boolean } {
  const hasMore = rows.length > page.limit;
  const items = hasMore ? rows.slice(0, page.limit) : rows;
  return { items, cursor: hasMore ? items[items.length - 1]!.id : "", hasMore };
}

/** The store's page query for a validated page: one row more than asked, to learn whether more follow. */
export function storePage(page: Page): { limit: number; after?: string; search?: string } {
  return {
    limit: page.limit + 1,
    ...(page.after !== undefined ? { after: page.after } : {}),
    ...(page.search !== undefined ? { search: page.search } : {}),
  };
}
