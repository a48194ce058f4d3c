import type { PageRequest } from "@latchkey/proto/common/v1/common_pb";
import type { Branding } from "@latchkey/proto/portal/v1/portal_pb";
import { domainError, ErrorReason, invalidInput } from "@latchkey/runtime";
import { DEFAULT_SESSION_TTL_MS, MIN_SESSION_TTL_MS } from "./settings.ts";

/** The scopes a session may carry, as Unkey names them. */
export const SCOPES = ["keys:read", "keys:create", "keys:reroll", "analytics:read"] as const;
export type Scope = (typeof SCOPES)[number];

const SLUG = /^[a-zA-Z0-9_-]{3,64}$/;
const COLOR = /^#[0-9a-fA-F]{6}$/;

export const portalNotFound = (id: string) =>
  domainError(ErrorReason.PORTAL_NOT_FOUND, `The portal '${id}' does not exist.`);
export const sessionNotFound = (id: string) =>
  domainError(ErrorReason.PORTAL_SESSION_NOT_FOUND, `The portal session '${id}' does not exist.`);
/** One answer for a key that is missing, another API's, or another user's: nothing tells them apart. */
export const keyNotFound = (id: string) =>
  domainError(ErrorReason.KEY_NOT_FOUND, `The key '${id}' does not exist.`);

export function nameOf(name: string): string {
  if (name.length < 1 || name.length > 255) throw invalidInput("/name", "name must be 1 to 255 characters.");
  return name;
}

export function slugOf(slug: string): string {
  if (!SLUG.test(slug)) {
    throw invalidInput(
      "/slug",
      "slug must be 3 to 64 letters, digits, '_' or '-'.",
      "Pick a slug such as acme-keys.",
    );
  }
  return slug;
}

export function ttlOf(ttl: bigint | undefined): number {
  if (ttl === undefined) return DEFAULT_SESSION_TTL_MS;
  const ms = Number(ttl);
  if (ms < MIN_SESSION_TTL_MS || ms > DEFAULT_SESSION_TTL_MS) {
    throw invalidInput(
      "/sessionTtlMs",
      `sessionTtlMs must be ${MIN_SESSION_TTL_MS} to ${DEFAULT_SESSION_TTL_MS} (1 minute to 24 hours).`,
    );
  }
  return ms;
}

/** The branding as stored; a logo must be an https URL (the portal's page loads it). */
export function brandingOf(b: Branding | undefined) {
  const title = b?.title ?? null;
  const accentColor = b?.accentColor ?? null;
  const logoUrl = b?.logoUrl ?? null;
  if (title !== null && (title.length < 1 || title.length > 100)) {
    throw invalidInput("/branding/title", "title must be 1 to 100 characters.");
  }
  if (accentColor !== null && !COLOR.test(accentColor)) {
    throw invalidInput(
      "/branding/accentColor",
      "accentColor must be a color as #rrggbb.",
      "Send e.g. #4f46e5.",
    );
  }
  if (logoUrl !== null && !isUrl(logoUrl, ["https:"], 2048)) {
    throw invalidInput("/branding/logoUrl", "logoUrl must be an https URL of at most 2048 characters.");
  }
  return { title, accentColor, logoUrl };
}

export function externalIdOf(externalId: string): string {
  if (externalId.length < 1 || externalId.length > 256) {
    throw invalidInput("/externalId", "externalId must be 1 to 256 characters.");
  }
  return externalId;
}

export function scopesOf(scopes: readonly string[]): Scope[] {
  if (scopes.length === 0)
    throw invalidInput("/scopes", "scopes must name at least one scope.", `One of ${SCOPES.join(", ")}.`);
  scopes.forEach((s, i) => {
    if (!(SCOPES as readonly string[]).includes(s)) {
      throw invalidInput(`/scopes/${i}`, `'${s}' is not a scope.`, `One of ${SCOPES.join(", ")}.`);
    }
  });
  return [...new Set(scopes)] as Scope[];
}

export function returnUrlOf(url: string | undefined): string | null {
  if (url === undefined) return null;
  if (!isUrl(url, ["https:", "http:"], 500)) {
    throw invalidInput(
      "/returnUrl",
      "returnUrl must be an absolute http or https URL of at most 500 characters.",
    );
  }
  return url;
}

function isUrl(text: string, protocols: string[], max: number): boolean {
  if (text.length > max) return false;
  try {
    const u = new URL(text);
    return protocols.includes(u.protocol) && u.username === "" && u.password === "";
  } catch {
    return false;
  }
}

export function pageOf(page: PageRequest | undefined): { limit: number; after: string | undefined } {
  const limit = page?.limit || 100;
  if (limit < 1 || limit > 100) throw invalidInput("/limit", `limit must be 1 to 100, got ${limit}`);
  const cursor = page?.cursor ?? "";
  if (cursor.length > 1024) throw invalidInput("/cursor", "cursor must be at most 1024 characters");
  return { limit, after: cursor === "" ? undefined : cursor };
}
