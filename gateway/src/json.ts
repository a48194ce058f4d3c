import type { PageResponse, RatelimitConfig } from "@latchkey/proto/common/v1/common_pb";
import type { Identity, Permission, Role } from "@latchkey/proto/identity/v1/identity_pb";
import {
  type Credits,
  type KeyIdentity,
  type KeyRole,
  RefillInterval,
} from "@latchkey/proto/keys/v1/keys_pb";

/**
 * Proto messages to the public JSON: int64 arrive as bigint and leave as
 * numbers, meta_json strings leave as objects, unset optionals are omitted.
 */

export const num = (v: bigint): number => Number(v);

export const optNum = (v: bigint | undefined): number | undefined =>
  v === undefined ? undefined : Number(v);

/** A stored meta string as the object the caller gave; a corrupt one is dropped rather than failing a read. */
export function meta(json: string | undefined): Record<string, unknown> | undefined {
  if (json === undefined || json === "") return undefined;
  try {
    return JSON.parse(json) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Copies only the defined entries, so absent optionals are omitted rather than written as null. */
export function defined<T extends Record<string, unknown>>(o: T): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const k in o) if (o[k] !== undefined) out[k] = o[k];
  return out as Partial<T>;
}

const INTERVALS = {
  [RefillInterval.UNSPECIFIED]: undefined,
  [RefillInterval.DAILY]: "daily",
  [RefillInterval.MONTHLY]: "monthly",
} as const satisfies Record<RefillInterval, string | undefined>;

export const INTERVAL_OF = { daily: RefillInterval.DAILY, monthly: RefillInterval.MONTHLY } as const;

/** Credits of a key, or of updateCredits' answer (the same two fields). */
export function credits(c: Pick<Credits, "remaining" | "refill">) {
  return {
    remaining: optNum(c.remaining) ?? null,
    ...(c.refill
      ? {
          refill: defined({
            interval: INTERVALS[c.refill.interval],
            amount: num(c.refill.amount),
            refillDay: c.refill.refillDay,
          }),
        }
      : {}),
  };
}

export const ratelimitConfig = (r: RatelimitConfig) => ({
  id: r.id,
  name: r.name,
  limit: num(r.limit),
  duration: num(r.duration),
  autoApply: r.autoApply,
});

export const identity = (i: KeyIdentity) =>
  defined({
    id: i.id,
    externalId: i.externalId,
    meta: meta(i.metaJson),
    ratelimits: i.ratelimits.length > 0 ? i.ratelimits.map(ratelimitConfig) : undefined,
  });

/** Unkey's Identity: id, externalId, and meta and ratelimits only when set. */
export const identityData = (i: Identity) =>
  defined({
    id: i.id,
    externalId: i.externalId,
    meta: meta(i.metaJson),
    ratelimits: i.ratelimits.length > 0 ? i.ratelimits.map(ratelimitConfig) : undefined,
    ipAllowList: i.ipAllowList.length > 0 ? i.ipAllowList : undefined,
  });

/** Unkey's Permission: id, name, slug, and description only when set (identity's Permission or keys' KeyPermission). */
export const permissionData = (p: Pick<Permission, "id" | "name" | "slug"> & { description?: string }) =>
  defined({ id: p.id, name: p.name, slug: p.slug, description: p.description || undefined });

/** Unkey's Role: id, name, and description and permissions only when set. */
export const roleData = (r: Role) =>
  defined({
    id: r.id,
    name: r.name,
    description: r.description || undefined,
    permissions: r.permissions.length > 0 ? r.permissions.map(permissionData) : undefined,
  });

/** A key's role as keys.add/remove/setRoles answer it: id, name, description when set, and always its permissions. */
export const keyRoleData = (r: KeyRole) =>
  defined({
    id: r.id,
    name: r.name,
    description: r.description || undefined,
    permissions: r.permissions.map(permissionData),
  });

/** Unkey's Pagination: cursor only while another page exists. */
export function pagination(page: PageResponse | undefined): { cursor?: string; hasMore: boolean } {
  return page?.hasMore && page.cursor !== "" ? { cursor: page.cursor, hasMore: true } : { hasMore: false };
}
