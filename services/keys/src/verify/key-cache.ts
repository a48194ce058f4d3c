import { Batcher, type Clock } from "@latchkey/runtime";
import { LRUCache } from "lru-cache";
import { textBytes as text } from "../byte-sizes.ts";
import type { CachedKey, KeyLookup } from "../store/keys-store.ts";

interface Entry {
  workspaceId: string;
  /** null: the workspace has no key with this hash (a negative entry). */
  key: CachedKey | null;
  loadedAt: number;
  /**
   * The same hash in another workspace: a hash is unique per workspace only.
   * Rare (a key string imported into two workspaces, or the same wrong string
   * tried in several), so an entry is looked up by hash and its workspace
   * compared: no key string is built per verification.
   */
  next: Entry | undefined;
  /** Bytes counted for the record itself (recordBytes). */
  bytes: number;
  /** Bytes counted for what verification works out from the record and keeps while it lives (charge). */
  derived: { grants: number; verdicts: number; segments: number };
}

/**
 * What verification keeps per cached key besides the record: its grants, the
 * verdicts of permission queries remembered for them, its answer's encoded fields.
 */
export type Derived = keyof Entry["derived"];

/** Most workspaces kept for one hash; beyond, the one cached longest ago goes. */
const MAX_WORKSPACES_PER_HASH = 8;

/**
 * Default bound of the bytes counted for every entry (KEY_CACHE_MAX_BYTES):
 * 100,000 keys of a typical size (KEY_CACHE_SIZE's default) count about 150
 * MiB, so the bound on bytes takes over only from keys larger than that.
 */
export const KEY_CACHE_MAX_BYTES = 160 * 1024 * 1024;

/**
 * The fixed part of an entry: the Entry, the record, its arrays, an lru-cache
 * slot and the hash table's share (measured: README, Memory).
 */
const ENTRY_BYTES = 640;

/**
 * The bytes an entry holds for its record, counted from its strings' lengths
 * (no scan of their characters: meta can be large). An upper bound rather than
 * a guess, so the cache stays under its bound whatever the keys hold.
 */
export function recordBytes(workspaceId: string, hash: string, key: CachedKey | null): number {
  // A found key's workspace and hash are its record's strings (KeyCache.put), a miss's the lookup's.
  let bytes = ENTRY_BYTES + text(workspaceId) + text(hash);
  if (key === null) return bytes;
  bytes += text(key.id) + text(key.apiId) + text(key.name) + text(key.metaJson);
  bytes += text(key.externalId) + text(key.identityId);
  for (const p of key.permissions) bytes += 8 + text(p);
  for (const r of key.roles) bytes += 8 + text(r);
  for (const r of key.ratelimits) bytes += 96 + text(r.id) + text(r.name);
  return bytes;
}

const entryBytes = (e: Entry) => e.bytes + e.derived.grants + e.derived.verdicts + e.derived.segments;

/**
 * Keys by workspace and hash, in process: a bounded LRU with negative entries,
 * so repeated verification of the same key, or of the same wrong key, costs no
 * query. A verification finds only its own workspace's key, whatever other
 * workspaces hold under the same hash. Freshness comes from invalidation (every
 * change publishes KeyChanged, see events.ts), not from expiry; the TTL only
 * bounds staleness should an invalidation message be lost while the bus
 * reconnects.
 *
 * The order of use is lru-cache's linked list, so a hit writes nothing to the
 * hash table. Kept as a Map's insertion order (a hit deleted and re-inserted
 * its entry), every hit of a hot key left a deleted slot in the same bucket
 * chain, which its next look-up walked until the table was rebuilt (a hit
 * grew costlier between rebuilds, the more so the larger the cache), and
 * finding the oldest entry to evict walked every slot evicted before it.
 *
 * Cached records are shared: never mutate one. Their credit balance is not
 * authoritative (other instances spend credits without invalidating), so
 * callers read balances from the store.
 */
export class KeyCache {
  /** By hash: the entry of the workspace that cached it last, then the others (Entry.next). */
  private readonly entries: LRUCache<string, Entry>;
  private readonly loading = new Map<string, Promise<CachedKey | null>>();
  // Bumped by every invalidation: a load that started before one must not be cached after it.
  private generation = 0;

  constructor(
    private readonly load: (workspaceId: string, hash: string) => Promise<CachedKey | undefined>,
    private readonly clock: Clock,
    private readonly options: { max?: number; maxBytes?: number; ttlMs?: number } = {},
  ) {
    this.entries = new LRUCache({
      max: options.max ?? 100_000,
      // Bytes as well as entries: a count alone lets keys with large meta take any amount of memory.
      maxSize: options.maxBytes ?? KEY_CACHE_MAX_BYTES,
      sizeCalculation: (head) => {
        let bytes = 0;
        for (let e: Entry | undefined = head; e !== undefined; e = e.next) bytes += entryBytes(e);
        return bytes;
      },
    });
  }

  /** The cached answer without any I/O: a key, null for a known miss, undefined when not cached. */
  peek(workspaceId: string, hash: string): CachedKey | null | undefined {
    let entry = this.entries.get(hash);
    while (entry !== undefined && entry.workspaceId !== workspaceId) entry = entry.next;
    if (entry === undefined) return undefined;
    if (this.clock.now() - entry.loadedAt > (this.options.ttlMs ?? 300_000)) {
      this.drop(workspaceId, hash);
      return undefined;
    }
    return entry.key;
  }

  /** Loads from the store (once for concurrent callers of the same key) and caches the answer. */
  fetch(workspaceId: string, hash: string): Promise<CachedKey | null> {
    // Only on a miss: the hit path builds no string.
    const id = `${workspaceId}\n${hash}`;
    const pending = this.loading.get(id);
    if (pending) return pending;
    const generation = this.generation;
    const promise = this.load(workspaceId, hash)
      .then((key) => {
        const found = key ?? null;
        if (generation === this.generation) this.put(workspaceId, hash, found);
        return found;
      })
      .finally(() => {
        if (this.loading.get(id) === promise) this.loading.delete(id);
      });
    this.loading.set(id, promise);
    return promise;
  }

  async get(workspaceId: string, hash: string): Promise<CachedKey | null> {
    const hit = this.peek(workspaceId, hash);
    return hit !== undefined ? hit : this.fetch(workspaceId, hash);
  }

  /** Drops one workspace's key by hash, or everything when only ids are known. */
  invalidate(key?: { workspaceId: string; hash: string }): void {
    this.generation++;
    this.loading.clear();
    if (key) this.drop(key.workspaceId, key.hash);
    else this.entries.clear();
  }

  /**
   * Counts `bytes` that verification keeps for a cached key besides its record
   * (its grants, its answer's encoded fields; kept while the record is), in
   * place of what was counted for that before. Evicts the least recently used
   * to stay under the bound; a key no longer cached is counted nothing. Called
   * when such a thing is worked out, once per record, not per verification.
   */
  charge(key: CachedKey, kind: Derived, bytes: number): void {
    const head = this.entries.peek(key.hash);
    let found: Entry | undefined = head;
    while (found !== undefined && found.key !== key) found = found.next;
    if (found === undefined || found.derived[kind] === bytes) return;
    const charged: Entry = { ...found, derived: { ...found.derived, [kind]: bytes } };
    // lru-cache counts a value's size when it is set: a changed entry is set as a new chain.
    this.entries.set(key.hash, replaced(head!, found, charged));
  }

  /** Hashes cached (each with one or more workspaces' entries). */
  get size(): number {
    return this.entries.size;
  }

  /** Bytes counted for every entry, at most maxBytes. */
  get bytes(): number {
    return this.entries.calculatedSize;
  }

  private put(workspaceId: string, hash: string, key: CachedKey | null): void {
    // A found key's own workspace and hash (the same text) are kept rather than the lookup's copies.
    const ws = key?.workspaceId ?? workspaceId;
    const at = key?.hash ?? hash;
    const others = without(this.entries.peek(at), ws, MAX_WORKSPACES_PER_HASH - 1);
    // Beyond max entries or maxBytes, lru-cache drops the least recently used hashes; an entry
    // larger than maxBytes by itself is not kept.
    this.entries.set(at, {
      workspaceId: ws,
      key,
      loadedAt: this.clock.now(),
      next: others,
      bytes: recordBytes(ws, at, key),
      derived: { grants: 0, verdicts: 0, segments: 0 },
    });
  }

  private drop(workspaceId: string, hash: string): void {
    const head = this.entries.peek(hash);
    if (head === undefined) return;
    const rest = without(head, workspaceId, MAX_WORKSPACES_PER_HASH);
    if (rest === undefined) this.entries.delete(hash);
    else if (rest !== head) this.entries.set(hash, rest);
  }
}

/** The chain from `head` with `old` replaced by `updated`. */
function replaced(head: Entry, old: Entry, updated: Entry): Entry {
  if (head === old) return updated;
  return { ...head, next: replaced(head.next!, old, updated) };
}

/**
 * The chain from `entry` without `workspaceId`'s entry, at most `max` long
 * (the oldest cut); `entry` itself when nothing changes. Entries are never
 * changed once cached: a changed chain is made of new ones.
 */
function without(entry: Entry | undefined, workspaceId: string, max: number): Entry | undefined {
  const kept: Entry[] = [];
  let changed = false;
  for (let e = entry; e !== undefined; e = e.next) {
    if (e.workspaceId === workspaceId || kept.length === max) changed = true;
    else kept.push(e);
  }
  if (!changed) return entry;
  let next: Entry | undefined;
  for (let i = kept.length - 1; i >= 0; i--) next = { ...kept[i]!, next };
  return next;
}

/**
 * One lookup function for KeyCache out of a store's many-key query: the
 * misses that arrive together (a verification batch's, whose items all look
 * up their key in the same turn) are looked up in one query, at most
 * `maxBatch` keys each and `maxInFlight` queries at once (the rest wait and
 * go together). Concurrent misses of one key are one lookup already
 * (KeyCache.fetch).
 */
export function lookupTogether(
  findMany: (lookups: readonly KeyLookup[]) => Promise<readonly CachedKey[]>,
  options: { maxBatch?: number; maxInFlight?: number } = {},
): (workspaceId: string, hash: string) => Promise<CachedKey | undefined> {
  const batcher = new Batcher<KeyLookup, CachedKey | null>(
    async (lookups) => {
      const found = new Map<string, CachedKey>();
      for (const key of await findMany(lookups)) found.set(`${key.workspaceId}\n${key.hash}`, key);
      return lookups.map((l) => found.get(`${l.workspaceId}\n${l.hash}`) ?? null);
    },
    { maxBatch: options.maxBatch ?? 1_000, maxInFlight: options.maxInFlight ?? 4 },
  );
  return async (workspaceId, hash) => (await batcher.call({ workspaceId, hash })) ?? undefined;
}
