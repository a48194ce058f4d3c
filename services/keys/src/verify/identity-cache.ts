import { create } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import type { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import {
  Batcher,
  type Bus,
  type Clock,
  domainError,
  ErrorReason,
  OldestFirst,
  onIdentityChanged,
  systemClock,
} from "@latchkey/runtime";
import { AllowList } from "../allow-list.ts";
import { textBytes } from "../byte-sizes.ts";
import type { KeyRatelimitRecord } from "../store/keys-store.ts";

/** A role as verification needs it: its name and its permission slugs. */
export interface ResolvedRole {
  name: string;
  permissions: readonly string[];
}

/** An identity as verification answers it and applies its limits. */
export interface ResolvedIdentity {
  id: string;
  externalId: string;
  metaJson: string | undefined;
  ratelimits: readonly KeyRatelimitRecord[];
  /** The identity's IP allow-list, parsed once per cached entry; null when it has none. */
  allowList: AllowList | null;
}

/**
 * What a key's roles and direct permissions grant, resolved through the
 * cache. Shared between verifications of the same cached key: never mutate.
 */
export interface Grants {
  /** The key's roles that still exist, in the key's order. */
  roles: readonly ResolvedRole[];
  /** Their names: the key's own array when all exist. */
  roleNames: readonly string[];
  /** The key's direct permissions that still exist, then its roles' permissions, each once. */
  permissions: readonly string[];
  /** The same permissions as a set, for evaluating permission queries. */
  held: ReadonlySet<string>;
}

/** The fields of a key its grants are resolved from. */
export interface GrantedKey {
  workspaceId: string;
  roles: readonly string[];
  permissions: readonly string[];
}

interface Lookup {
  workspaceId: string;
  name: string;
}

/**
 * Roles (by name), permissions (by slug) and identities (by id) of the
 * identity service, cached in process for verification, per workspace. Freshness comes from
 * events.identity.changed: any change in a workspace drops everything cached
 * for it (changes are rare; verifications are not), so a role's new
 * permissions apply at the next verification. Misses that arrive together,
 * as a verification batch's do, travel in one call per workspace. What a
 * workspace has cached is also dropped `ttlMs` (default a minute) after its
 * first load, so a message lost while the bus reconnects leaves a deleted
 * role or permission granting for a minute at most, not for good.
 *
 * Cached values are shared: never mutate one.
 */
export class IdentityCache {
  private readonly roles = new Map<string, Map<string, ResolvedRole | null>>();
  private readonly identities = new Map<string, Map<string, ResolvedIdentity | null>>();
  /** slug → slug when the permission exists, null when it does not. */
  private readonly permissions = new Map<string, Map<string, string | null>>();
  /** When each workspace's entries started being cached. */
  private readonly since = new Map<string, number>();
  // Bumped by every invalidation: a load that started before one must not be cached after it.
  private generation = 0;
  /** Each cached key's grants as resolved at a generation; a later generation resolves them again. */
  private readonly grantsOfKey = new WeakMap<GrantedKey, { generation: number; grants: Grants }>();
  /** Each workspace's entries of one kind, oldest first, for the eviction beyond maxPerWorkspace. */
  private readonly oldest = new WeakMap<Map<string, unknown>, OldestFirst<string>>();
  /** Bytes counted for every entry (entryBytes), and for each workspace's. */
  private total = 0;
  private readonly bytesOf = new Map<string, number>();
  /** Lookups under way per workspace (MAX_IDENTITY_LOOKUPS_PER_WORKSPACE). */
  private readonly lookups = new Map<string, number>();
  private readonly roleLoader: Batcher<Lookup, ResolvedRole | null>;
  private readonly identityLoader: Batcher<Lookup, ResolvedIdentity | null>;
  private readonly permissionLoader: Batcher<Lookup, string | null>;
  private readonly unsubscribe: () => void;

  constructor(
    client: Client<typeof IdentityService>,
    bus: Bus,
    private readonly options: {
      maxPerWorkspace?: number;
      /** Most lookups of one workspace under way at once (MAX_IDENTITY_LOOKUPS_PER_WORKSPACE). */
      maxLookupsPerWorkspace?: number;
      /** Most bytes counted for all workspaces' entries together (default IDENTITY_CACHE_MAX_BYTES). */
      maxBytes?: number;
      ttlMs?: number;
      clock?: Clock;
      /** Told of each key's grants as they are worked out and kept (the key cache counts their bytes). */
      onGrants?: (key: GrantedKey, grants: Grants) => void;
    } = {},
  ) {
    this.roleLoader = new Batcher<Lookup, ResolvedRole | null>((lookups) =>
      perWorkspace<ResolvedRole>(lookups, async (workspaceId, names) => {
        const res = await client.resolveRoles({ caller: internalCaller(workspaceId), names });
        return new Map(
          res.roles.map((r) => [r.name, { name: r.name, permissions: r.permissions.map((p) => p.slug) }]),
        );
      }),
    );
    this.permissionLoader = new Batcher<Lookup, string | null>((lookups) =>
      perWorkspace<string>(lookups, async (workspaceId, slugs) => {
        const res = await client.resolvePermissions({
          caller: internalCaller(workspaceId),
          slugs,
          createMissing: false,
        });
        return new Map(res.permissions.map((p) => [p.slug, p.slug]));
      }),
    );
    this.identityLoader = new Batcher<Lookup, ResolvedIdentity | null>((lookups) =>
      perWorkspace<ResolvedIdentity>(lookups, async (workspaceId, identityIds) => {
        const res = await client.getIdentities({ caller: internalCaller(workspaceId), identityIds });
        return new Map(
          res.identities.map((i) => [
            i.id,
            {
              id: i.id,
              externalId: i.externalId,
              metaJson: i.metaJson,
              ratelimits: i.ratelimits.map((r) => ({
                id: r.id,
                name: r.name,
                limit: Number(r.limit),
                duration: Number(r.duration),
                autoApply: r.autoApply,
              })),
              allowList: AllowList.of(i.ipAllowList),
            },
          ]),
        );
      }),
    );
    this.unsubscribe = onIdentityChanged(bus, (change) => this.invalidate(change.workspaceId || undefined));
  }

  /**
   * What the key grants: its existing roles and the permissions of those and
   * of its existing direct permissions. Worked out once per key record and
   * kept (weakly, by the record) until anything in this cache is invalidated;
   * no promise when all is cached.
   */
  grants(key: GrantedKey): Grants | Promise<Grants> {
    // Most keys have neither: nothing to look up or remember.
    if (key.roles.length === 0 && key.permissions.length === 0) return NO_GRANTS;
    this.expireStale(key.workspaceId);
    const memo = this.grantsOfKey.get(key);
    if (memo !== undefined && memo.generation === this.generation) return memo.grants;
    const generation = this.generation;
    const permissions = this.existingPermissions(key.workspaceId, key.permissions);
    const roles = this.existingRoles(key.workspaceId, key.roles);
    const remember = (direct: readonly string[], existing: readonly ResolvedRole[]): Grants => {
      const grants = grantsOf(key, direct, existing);
      if (generation === this.generation) {
        this.grantsOfKey.set(key, { generation, grants });
        this.options.onGrants?.(key, grants);
      }
      return grants;
    };
    if (permissions instanceof Promise || roles instanceof Promise) {
      return Promise.all([permissions, roles]).then(([direct, existing]) => remember(direct, existing));
    }
    return remember(permissions, roles);
  }

  /** The roles of these names that exist, in the order named. */
  async resolveRoles(workspaceId: string, names: readonly string[]): Promise<ResolvedRole[]> {
    return this.existingRoles(workspaceId, names);
  }

  /**
   * The slugs among these that name a permission that exists, in the order
   * given: a key's direct permission deleted since (its deletion not yet taken
   * off the key, or missed) grants nothing. The same array when all exist;
   * no promise when all are cached.
   */
  existingPermissions(
    workspaceId: string,
    slugs: readonly string[],
  ): readonly string[] | Promise<readonly string[]> {
    if (slugs.length === 0) return slugs;
    const found = slugs.map((slug) =>
      this.cached(this.permissions, this.permissionLoader, workspaceId, slug),
    );
    if (found.some((f) => f instanceof Promise)) {
      return Promise.all(found).then((all) => existing(slugs, all));
    }
    return existing(slugs, found as (string | null)[]);
  }

  /** resolveRoles without a promise when every name is cached. */
  private existingRoles(
    workspaceId: string,
    names: readonly string[],
  ): ResolvedRole[] | Promise<ResolvedRole[]> {
    if (names.length === 0) return [];
    const found = names.map((name) => this.cached(this.roles, this.roleLoader, workspaceId, name));
    const exist = (all: readonly (ResolvedRole | null)[]) => all.filter((r): r is ResolvedRole => r !== null);
    if (found.some((f) => f instanceof Promise)) return Promise.all(found).then(exist);
    return exist(found as (ResolvedRole | null)[]);
  }

  /** The identity with this id, or null when it no longer exists. */
  identity(
    workspaceId: string,
    identityId: string,
  ): ResolvedIdentity | null | Promise<ResolvedIdentity | null> {
    return this.cached(this.identities, this.identityLoader, workspaceId, identityId);
  }

  /** Drops what is cached for one workspace, or everything. */
  invalidate(workspaceId?: string): void {
    this.generation++;
    if (workspaceId === undefined) {
      this.roles.clear();
      this.identities.clear();
      this.permissions.clear();
      this.since.clear();
      this.bytesOf.clear();
      this.total = 0;
    } else this.evict(workspaceId);
  }

  /** Bytes counted for what is cached, at most maxBytes. */
  get bytes(): number {
    return this.total;
  }

  /** Bytes counted for what one workspace has cached. */
  held(workspaceId: string): number {
    return this.bytesOf.get(workspaceId) ?? 0;
  }

  close(): void {
    this.unsubscribe();
  }

  private now(): number {
    return (this.options.clock ?? systemClock).now();
  }

  private cached<T extends Cached>(
    cache: Map<string, Map<string, T | null>>,
    loader: Batcher<Lookup, T | null>,
    workspaceId: string,
    name: string,
  ): T | null | Promise<T | null> {
    this.expireStale(workspaceId);
    const hit = cache.get(workspaceId)?.get(name);
    if (hit !== undefined) return hit;
    const under = this.lookups.get(workspaceId) ?? 0;
    if (under >= (this.options.maxLookupsPerWorkspace ?? MAX_IDENTITY_LOOKUPS_PER_WORKSPACE)) {
      return Promise.reject(
        domainError(
          ErrorReason.UNAVAILABLE,
          "Too many roles, permissions or identities of this workspace are being looked up at once; retry shortly.",
        ),
      );
    }
    this.lookups.set(workspaceId, under + 1);
    const generation = this.generation;
    return loader
      .call({ workspaceId, name })
      .then((value) => {
        if (generation === this.generation) this.put(cache, workspaceId, name, value);
        return value;
      })
      .finally(() => {
        const left = (this.lookups.get(workspaceId) ?? 1) - 1;
        if (left === 0) this.lookups.delete(workspaceId);
        else this.lookups.set(workspaceId, left);
      });
  }

  /** Drops the workspace's entries once they are older than the TTL. */
  private expireStale(workspaceId: string): void {
    const since = this.since.get(workspaceId);
    if (since !== undefined && this.now() - since > (this.options.ttlMs ?? 60_000))
      this.invalidate(workspaceId);
  }

  private put<T extends Cached>(
    cache: Map<string, Map<string, T | null>>,
    workspaceId: string,
    name: string,
    value: T | null,
  ): void {
    const maxBytes = this.options.maxBytes ?? IDENTITY_CACHE_MAX_BYTES;
    const bytes = entryBytes(name, value);
    // One entry may not take a large share of what every workspace shares: it is asked for each time.
    if (bytes > maxBytes / 16) return;
    let entries = cache.get(workspaceId);
    if (!entries) {
      entries = new Map();
      cache.set(workspaceId, entries);
      this.oldest.set(entries, new OldestFirst(entries));
    }
    if (!this.since.has(workspaceId)) this.since.set(workspaceId, this.now());
    const replaced = entries.get(name);
    if (replaced !== undefined) this.count(workspaceId, -entryBytes(name, replaced));
    entries.set(name, value);
    this.count(workspaceId, bytes);
    this.dropOldest(workspaceId, entries, () => entries.size > (this.options.maxPerWorkspace ?? 100_000));
    // Over the bound, a workspace above its fair share (the bound divided by the workspaces holding
    // entries) gives up its own oldest entries; one within it takes them from the workspace furthest
    // above its share. So no workspace within its share loses entries to another's.
    while (this.total > maxBytes) {
      const from = this.above(workspaceId, maxBytes) ? workspaceId : this.furthestAbove();
      if (from === undefined) return;
      do if (!this.dropOne(from)) return;
      while (this.total > maxBytes && this.above(from, maxBytes));
    }
  }

  /** Above its share of the bound in bytes (integers: share x workspaces against the bound). */
  private above(workspaceId: string, maxBytes: number): boolean {
    return (this.bytesOf.get(workspaceId) ?? 0) * this.bytesOf.size > maxBytes;
  }

  /** The workspace holding the most bytes: a scan, made only when one within its share needs room. */
  private furthestAbove(): string | undefined {
    let furthest: string | undefined;
    let most = 0;
    for (const [workspaceId, bytes] of this.bytesOf) {
      if (bytes > most) {
        most = bytes;
        furthest = workspaceId;
      }
    }
    return furthest;
  }

  /** Drops the workspace's oldest entry, identities first (they count the most), then roles, then permissions. */
  private dropOne(workspaceId: string): boolean {
    for (const kind of [this.identities, this.roles, this.permissions]) {
      const own = kind.get(workspaceId) as Map<string, Cached> | undefined;
      const name = own === undefined ? undefined : this.oldest.get(own)?.next();
      if (name === undefined) continue;
      this.count(workspaceId, -entryBytes(name, own!.get(name) ?? null));
      own!.delete(name);
      return true;
    }
    return false;
  }

  /** Drops a workspace's oldest entries of one kind while `over()`. */
  private dropOldest(workspaceId: string, entries: Map<string, Cached>, over: () => boolean): void {
    const oldest = this.oldest.get(entries);
    while (over()) {
      const name = oldest?.next();
      if (name === undefined) return;
      this.count(workspaceId, -entryBytes(name, entries.get(name) ?? null));
      entries.delete(name);
    }
  }

  /** Drops a workspace's entries without bumping the generation: nothing changed, memory is freed. */
  private evict(workspaceId: string): void {
    this.roles.delete(workspaceId);
    this.identities.delete(workspaceId);
    this.permissions.delete(workspaceId);
    this.since.delete(workspaceId);
    this.total -= this.bytesOf.get(workspaceId) ?? 0;
    this.bytesOf.delete(workspaceId);
  }

  private count(workspaceId: string, bytes: number): void {
    this.total += bytes;
    const held = (this.bytesOf.get(workspaceId) ?? 0) + bytes;
    // Only workspaces holding entries count toward the shares.
    if (held === 0) this.bytesOf.delete(workspaceId);
    else this.bytesOf.set(workspaceId, held);
  }
}

/**
 * Most lookups of one workspace's roles, permissions and identities under way
 * at once: past it, its verifications that need one answer UNAVAILABLE, so no
 * workspace's lookups queue without bound ahead of another's.
 */
export const MAX_IDENTITY_LOOKUPS_PER_WORKSPACE = 10_000;

/** Default bound of the bytes counted for the identity cache (IDENTITY_CACHE_MAX_BYTES). */
export const IDENTITY_CACHE_MAX_BYTES = 64 * 1024 * 1024;

type Cached = ResolvedRole | ResolvedIdentity | string | null;

/**
 * The bytes one cached entry holds, from its strings' lengths (byte-sizes.ts):
 * the Map's entry and its name, and a role, an identity (with the answer
 * message verification makes of it once), a permission's slug or nothing.
 */
function entryBytes(name: string, value: Cached): number {
  let bytes = 64 + textBytes(name);
  if (value === null) return bytes;
  if (typeof value === "string") return bytes + textBytes(value);
  if ("permissions" in value) {
    bytes += 64 + textBytes(value.name);
    for (const p of value.permissions) bytes += 8 + textBytes(p);
    return bytes;
  }
  bytes += 320 + textBytes(value.id) + textBytes(value.externalId) + textBytes(value.metaJson);
  for (const r of value.ratelimits) bytes += 96 + textBytes(r.id) + textBytes(r.name);
  // A parsed range is an address object with its parts array and the prefix length.
  if (value.allowList !== null) bytes += 64 + 128 * value.allowList.size;
  return bytes;
}

/** The bytes a key's grants keep besides the strings they share with the cache: their arrays and set. */
export function grantsBytes(grants: Grants): number {
  const arrays = grants.roles.length + grants.roleNames.length + grants.permissions.length;
  return 256 + 8 * arrays + 48 * grants.held.size;
}

/** The grants of a key without roles or direct permissions. */
const NO_GRANTS: Grants = { roles: [], roleNames: [], permissions: [], held: new Set() };

function grantsOf(key: GrantedKey, direct: readonly string[], roles: readonly ResolvedRole[]): Grants {
  const held = new Set(direct);
  for (const role of roles) for (const p of role.permissions) held.add(p);
  return {
    roles,
    // A role deleted since it was given to the key no longer counts.
    roleNames: roles.length === key.roles.length ? key.roles : roles.map((r) => r.name),
    permissions: roles.length === 0 ? direct : [...held],
    held,
  };
}

function existing(slugs: readonly string[], found: readonly (string | null)[]): readonly string[] {
  return found.includes(null) ? slugs.filter((_, i) => found[i] !== null) : slugs;
}

/** The identity service trusts the keys service: only the workspace travels. */
const internalCaller = (workspaceId: string) => create(CallerSchema, { workspaceId });

/** One call per workspace for a batch of lookups; null for names the service did not find. */
async function perWorkspace<T>(
  lookups: Lookup[],
  load: (workspaceId: string, names: string[]) => Promise<Map<string, T>>,
): Promise<(T | null)[]> {
  const byWorkspace = new Map<string, Set<string>>();
  for (const l of lookups) {
    const names = byWorkspace.get(l.workspaceId);
    if (names) names.add(l.name);
    else byWorkspace.set(l.workspaceId, new Set([l.name]));
  }
  const found = new Map(
    await Promise.all([...byWorkspace].map(async ([ws, names]) => [ws, await load(ws, [...names])] as const)),
  );
  return lookups.map((l) => found.get(l.workspaceId)?.get(l.name) ?? null);
}
