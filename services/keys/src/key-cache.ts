import { Batcher, type Clock } from "@latchkey/runtime";
import { LRUCache } from "lru-cache";
import type { CachedKey } from "./store/keys-store.ts";

interface Entry {
  /** null: the store has no key with this hash (a negative entry). */
  key: CachedKey | null;
  loadedAt: number;
}

/**
 * Keys by hash, in process: a bounded LRU with negative entries, so repeated
 * verification of the same key, or of the same wrong key, costs no query.
 * Freshness comes from invalidation (every change publishes KeyChanged, see
 * events.ts), not from expiry; the TTL only bounds staleness should an
 * invalidation message be lost while the bus reconnects.
 *
 * The order of use is lru-cache's linked list, so a hit writes nothing to the
 * hash table. Kept as a Map's insertion order (a hit deleted and re-inserted
 * its entry), every hit of a hot key left a deleted slot in the same bucket
 * chain, which its next look-up walked until the table was rebuilt: with
 * 100,000 keys cached a hit cost 70 to 250 µs and grew between rebuilds, and
 * finding the oldest entry to evict walked every slot evicted before it.
 *
 * Cached records are shared: never mutate one. Their credit balance is not
 * authoritative (other instances spend credits without invalidating), so
 * callers read balances from the store.
 */
export class KeyCache {
  private readonly entries: LRUCache<string, Entry>;
  private readonly loading = new Map<string, Promise<CachedKey | null>>();
  // Bumped by every invalidation: a load that started before one must not be cached after it.
  private generation = 0;

  constructor(
    private readonly load: (hash: string) => Promise<CachedKey | undefined>,
    private readonly clock: Clock,
    private readonly options: { max?: number; ttlMs?: number } = {},
  ) {
    this.entries = new LRUCache({ max: options.max ?? 100_000 });
  }

  /** The cached answer without any I/O: a key, null for a known miss, undefined when not cached. */
  peek(hash: string): CachedKey | null | undefined {
    const entry = this.entries.get(hash);
    if (entry === undefined) return undefined;
    if (this.clock.now() - entry.loadedAt > (this.options.ttlMs ?? 300_000)) {
      this.entries.delete(hash);
      return undefined;
    }
    return entry.key;
  }

  /** Loads from the store (once for concurrent callers of the same hash) and caches the answer. */
  fetch(hash: string): Promise<CachedKey | null> {
    const pending = this.loading.get(hash);
    if (pending) return pending;
    const generation = this.generation;
    const promise = this.load(hash)
      .then((key) => {
        const found = key ?? null;
        if (generation === this.generation) this.put(hash, found);
        return found;
      })
      .finally(() => {
        if (this.loading.get(hash) === promise) this.loading.delete(hash);
      });
    this.loading.set(hash, promise);
    return promise;
  }

  async get(hash: string): Promise<CachedKey | null> {
    const hit = this.peek(hash);
    return hit !== undefined ? hit : this.fetch(hash);
  }

  /** Drops one key by hash, or everything when only ids are known. */
  invalidate(hash?: string): void {
    this.generation++;
    this.loading.clear();
    if (hash) this.entries.delete(hash);
    else this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  private put(hash: string, key: CachedKey | null): void {
    // Beyond max, lru-cache drops the least recently used entry.
    this.entries.set(hash, { key, loadedAt: this.clock.now() });
  }
}

/**
 * One lookup function for KeyCache out of a store's many-hash query: the
 * misses that arrive together (a verification batch's, whose items all look
 * up their key in the same turn) are looked up in one query, at most
 * `maxBatch` hashes each and `maxInFlight` queries at once (the rest wait and
 * go together). Concurrent misses of one hash are one lookup already
 * (KeyCache.fetch).
 */
export function lookupTogether(
  findMany: (hashes: readonly string[]) => Promise<readonly CachedKey[]>,
  options: { maxBatch?: number; maxInFlight?: number } = {},
): (hash: string) => Promise<CachedKey | undefined> {
  const batcher = new Batcher<string, CachedKey | null>(
    async (hashes) => {
      const found = new Map<string, CachedKey>();
      for (const key of await findMany(hashes)) found.set(key.hash, key);
      return hashes.map((hash) => found.get(hash) ?? null);
    },
    { maxBatch: options.maxBatch ?? 1_000, maxInFlight: options.maxInFlight ?? 4 },
  );
  return async (hash) => (await batcher.call(hash)) ?? undefined;
}
