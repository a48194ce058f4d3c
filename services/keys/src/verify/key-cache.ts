import { Batcher, type Clock, domainError, ErrorReason } from "@latchkey/runtime";
import { textBytes as text } from "../byte-sizes.ts";
import type { CachedKey, KeyLookup } from "../store/keys-store.ts";

/**
 * What verification keeps per cached key besides the record: its grants, the
 * verdicts of permission queries remembered for them, its answer's encoded fields.
 */
export type Derived = "grants" | "verdicts" | "segments";

/** Most workspaces cached for one hash; a further workspace's answer for it is not cached. */
const MAX_WORKSPACES_PER_HASH = 8;

/**
 * Default bound of the bytes counted for every entry (KEY_CACHE_MAX_BYTES):
 * 100,000 keys of a typical size (KEY_CACHE_SIZE's default) count about 150
 * MiB, so the bound on bytes takes over only from keys larger than that.
 */
export const KEY_CACHE_MAX_BYTES = 160 * 1024 * 1024;

/** The misses' room in bytes (negative entries), as a share of maxBytes on top of it: small records of fixed size. */
const MISSES_BYTES_SHARE = 1 / 16;

/** The misses kept, as a share of the found keys' bound (max): they never take room from found keys. */
const MISSES_SHARE = 1 / 10;

/**
 * Most lookups of one workspace under way at once (cache misses waiting for
 * the store): beyond, its verifications of keys not cached answer UNAVAILABLE,
 * so no workspace's misses queue without bound ahead of another's.
 */
export const MAX_LOOKUPS_PER_WORKSPACE = 2_000;

/**
 * The fixed part of an entry: the Entry, the record, its arrays and the hash
 * table's share (measured: README, Memory).
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

/** One workspace's answer for one hash: its key, or null when it has none (a miss). */
class Entry {
  /** The same hash cached for another workspace (a hash is unique per workspace only). */
  next: Entry | undefined = undefined;
  /** Its neighbours in its workspace's order of use (Share): older toward `oldest`. */
  older: Entry | undefined = undefined;
  newer: Entry | undefined = undefined;
  /** In the index and its workspace's order; false once removed (evicted, expired, invalidated). */
  cached = false;
  /** Bytes counted for the record itself (recordBytes), then for what is derived from it (charge). */
  readonly record: number;
  grants = 0;
  verdicts = 0;
  segments = 0;

  constructor(
    readonly workspaceId: string,
    readonly hash: string,
    readonly key: CachedKey | null,
    readonly loadedAt: number,
    readonly share: Share,
  ) {
    this.record = recordBytes(workspaceId, hash, key);
  }

  get bytes(): number {
    return this.record + this.grants + this.verdicts + this.segments;
  }
}

/** One workspace's entries in one space, in order of use (least recently used first). */
class Share {
  entries = 0;
  bytes = 0;
  oldest: Entry | undefined = undefined;
  newest: Entry | undefined = undefined;

  constructor(
    readonly workspaceId: string,
    readonly space: Space,
  ) {}
}

/**
 * A bounded room that workspaces share: found keys have one, misses another,
 * so no stream of misses takes room from found keys. Each workspace's fair
 * share is the room divided by the workspaces holding entries in it; while the
 * room is not full anyone may use it. Once full, a workspace above its share
 * makes room from its own least recently used entries, and one within it from
 * the workspace furthest above its share: a workspace within its share loses
 * entries only to its own use, to expiry and to invalidation.
 */
class Space {
  entries = 0;
  bytes = 0;
  readonly shares = new Map<string, Share>();

  constructor(
    readonly maxEntries: number,
    readonly maxBytes: number,
  ) {}

  shareOf(workspaceId: string): Share {
    let share = this.shares.get(workspaceId);
    if (share === undefined) {
      share = new Share(workspaceId, this);
      this.shares.set(workspaceId, share);
    }
    return share;
  }

  get full(): boolean {
    return this.entries > this.maxEntries || this.bytes > this.maxBytes;
  }

  /** Above its fair share in entries or in bytes (integers: share x workspaces against the bound). */
  above(share: Share): boolean {
    const n = this.shares.size;
    return share.entries * n > this.maxEntries || share.bytes * n > this.maxBytes;
  }

  /**
   * The workspace furthest above its share. A scan of the workspaces holding
   * entries, made only when one within its share needs room in a full space.
   */
  furthestAbove(): Share | undefined {
    let furthest: Share | undefined;
    let most = -1;
    for (const share of this.shares.values()) {
      const used = Math.max(share.entries / this.maxEntries, share.bytes / this.maxBytes);
      if (used > most) {
        most = used;
        furthest = share;
      }
    }
    return furthest;
  }

  /** Counts bytes added to (or taken from) one of the share's entries. */
  count(share: Share, bytes: number): void {
    share.bytes += bytes;
    this.bytes += bytes;
  }

  /** The entry as its workspace's most recently used. */
  append(entry: Entry): void {
    const share = entry.share;
    entry.older = share.newest;
    if (share.newest === undefined) share.oldest = entry;
    else share.newest.newer = entry;
    share.newest = entry;
    entry.cached = true;
    share.entries++;
    this.entries++;
    this.count(share, entry.bytes);
  }

  unlink(entry: Entry): void {
    const share = entry.share;
    const { older, newer } = entry;
    if (older === undefined) share.oldest = newer;
    else older.newer = newer;
    if (newer === undefined) share.newest = older;
    else newer.older = older;
    entry.older = entry.newer = undefined;
    entry.cached = false;
    share.entries--;
    this.entries--;
    this.count(share, -entry.bytes);
    if (share.entries === 0) this.shares.delete(share.workspaceId);
  }
}

/**
 * The entry becomes its workspace's most recently used: a few pointers, no
 * hash table write (a Map's insertion order, re-inserted on every hit, left a
 * deleted slot per hit in the hot key's bucket chain).
 */
function touch(entry: Entry): void {
  const newer = entry.newer;
  if (newer === undefined) return;
  const share = entry.share;
  const older = entry.older;
  newer.older = older;
  if (older === undefined) share.oldest = newer;
  else older.newer = newer;
  entry.older = share.newest;
  entry.newer = undefined;
  share.newest!.newer = entry;
  share.newest = entry;
}

/** A lookup under way; stale once an invalidation of its key overtook it (its answer is not cached). */
interface Loading {
  workspaceId: string;
  promise: Promise<CachedKey | null>;
  stale: boolean;
}

/**
 * Keys by workspace and hash, in process: bounded, with negative entries, so
 * repeated verification of the same key, or of the same wrong key, costs no
 * query. A verification finds only its own workspace's key, whatever other
 * workspaces hold under the same hash. Freshness comes from invalidation (every
 * change publishes KeyChanged, see events.ts), not from expiry; the TTL only
 * bounds staleness should an invalidation message be lost while the bus
 * reconnects.
 *
 * Workspaces share it fairly (Space): found keys and misses have rooms of their
 * own, each kept in order of use per workspace, so what one workspace verifies,
 * however much and however wrong, evicts only its own entries once it holds its
 * share. One hash table finds an entry by hash (its workspace compared); a hit
 * moves it in its workspace's order by pointers. lru-cache keeps one order for
 * all entries, and one cache per workspace would cost a second look-up a hit.
 *
 * Cached records are shared: never mutate one. Their credit balance is not
 * authoritative (other instances spend credits without invalidating), so
 * callers read balances from the store.
 */
export class KeyCache {
  /** By hash: the entry cached last, then the other workspaces' (Entry.next). */
  private readonly index = new Map<string, Entry>();
  private readonly found: Space;
  private readonly misses: Space;
  private readonly ttlMs: number;
  private readonly loading = new Map<string, Loading>();
  /** Lookups under way per workspace (MAX_LOOKUPS_PER_WORKSPACE). */
  private readonly lookups = new Map<string, number>();

  constructor(
    private readonly load: (workspaceId: string, hash: string) => Promise<CachedKey | undefined>,
    private readonly clock: Clock,
    private readonly options: {
      /** Most found keys held (KEY_CACHE_SIZE). */
      max?: number;
      /** Most bytes counted for found keys (KEY_CACHE_MAX_BYTES); misses have a sixteenth more of their own. */
      maxBytes?: number;
      /** Most misses held; default a tenth of max. */
      maxMisses?: number;
      ttlMs?: number;
      /** Most lookups of one workspace under way (MAX_LOOKUPS_PER_WORKSPACE). */
      maxLookupsPerWorkspace?: number;
    } = {},
  ) {
    const max = options.max ?? 100_000;
    const maxBytes = options.maxBytes ?? KEY_CACHE_MAX_BYTES;
    this.found = new Space(max, maxBytes);
    this.misses = new Space(
      options.maxMisses ?? Math.max(1, Math.ceil(max * MISSES_SHARE)),
      Math.floor(maxBytes * MISSES_BYTES_SHARE),
    );
    this.ttlMs = options.ttlMs ?? 300_000;
  }

  /** The cached answer without any I/O: a key, null for a known miss, undefined when not cached. */
  peek(workspaceId: string, hash: string): CachedKey | null | undefined {
    let entry = this.index.get(hash);
    while (entry !== undefined && entry.workspaceId !== workspaceId) entry = entry.next;
    if (entry === undefined) return undefined;
    if (this.clock.now() - entry.loadedAt > this.ttlMs) {
      this.remove(entry);
      return undefined;
    }
    touch(entry);
    return entry.key;
  }

  /** Loads from the store (once for concurrent callers of the same key) and caches the answer. */
  fetch(workspaceId: string, hash: string): Promise<CachedKey | null> {
    // Only on a miss: the hit path builds no string.
    const id = `${workspaceId}\n${hash}`;
    const pending = this.loading.get(id);
    if (pending) return pending.promise;
    const under = this.lookups.get(workspaceId) ?? 0;
    if (under >= (this.options.maxLookupsPerWorkspace ?? MAX_LOOKUPS_PER_WORKSPACE)) {
      return Promise.reject(
        domainError(
          ErrorReason.UNAVAILABLE,
          "Too many keys of this workspace that are not cached are being looked up at once; retry shortly.",
        ),
      );
    }
    this.lookups.set(workspaceId, under + 1);
    const loading: Loading = { workspaceId, promise: undefined as never, stale: false };
    loading.promise = this.load(workspaceId, hash)
      .then((key) => {
        const found = key ?? null;
        if (!loading.stale) this.put(workspaceId, hash, found);
        return found;
      })
      .finally(() => {
        if (this.loading.get(id) === loading) this.loading.delete(id);
        const left = (this.lookups.get(workspaceId) ?? 1) - 1;
        if (left === 0) this.lookups.delete(workspaceId);
        else this.lookups.set(workspaceId, left);
      });
    this.loading.set(id, loading);
    return loading.promise;
  }

  async get(workspaceId: string, hash: string): Promise<CachedKey | null> {
    const hit = this.peek(workspaceId, hash);
    return hit !== undefined ? hit : this.fetch(workspaceId, hash);
  }

  /**
   * Drops one workspace's key by hash, one workspace's every entry, or
   * everything when nothing is named; a lookup under way of what is dropped is
   * not cached when it answers.
   */
  invalidate(key?: { workspaceId: string; hash?: string | undefined }): void {
    if (key === undefined) {
      for (const loading of this.loading.values()) loading.stale = true;
      this.loading.clear();
      this.index.clear();
      for (const space of [this.found, this.misses]) {
        space.shares.clear();
        space.entries = space.bytes = 0;
      }
      return;
    }
    const { workspaceId, hash } = key;
    if (hash !== undefined) {
      const id = `${workspaceId}\n${hash}`;
      const loading = this.loading.get(id);
      if (loading !== undefined) {
        loading.stale = true;
        this.loading.delete(id);
      }
      let entry = this.index.get(hash);
      while (entry !== undefined && entry.workspaceId !== workspaceId) entry = entry.next;
      if (entry !== undefined) this.remove(entry);
      return;
    }
    for (const [id, loading] of this.loading) {
      if (loading.workspaceId !== workspaceId) continue;
      loading.stale = true;
      this.loading.delete(id);
    }
    for (const space of [this.found, this.misses]) {
      const share = space.shares.get(workspaceId);
      while (share?.oldest !== undefined) this.remove(share.oldest);
    }
  }

  /**
   * Counts `bytes` that verification keeps for a cached key besides its record
   * (its grants, its answer's encoded fields; kept while the record is), in
   * place of what was counted for that before, as a use of the key. Makes room
   * as an insertion does (Space); a key no longer cached is counted nothing.
   * Called when such a thing is worked out, once per record, not per verification.
   */
  charge(key: CachedKey, kind: Derived, bytes: number): void {
    let entry = this.index.get(key.hash);
    while (entry !== undefined && entry.key !== key) entry = entry.next;
    if (entry === undefined || entry[kind] === bytes) return;
    const space = entry.share.space;
    space.count(entry.share, bytes - entry[kind]);
    entry[kind] = bytes;
    touch(entry);
    this.makeRoom(entry);
  }

  /** Hashes cached (each with one or more workspaces' entries). */
  get size(): number {
    return this.index.size;
  }

  /** Bytes counted for every entry: found keys' at most maxBytes, misses' at most a sixteenth of it more. */
  get bytes(): number {
    return this.found.bytes + this.misses.bytes;
  }

  /** What one workspace holds: found keys, misses, and the bytes counted for both. */
  held(workspaceId: string): { keys: number; misses: number; bytes: number } {
    const found = this.found.shares.get(workspaceId);
    const misses = this.misses.shares.get(workspaceId);
    return {
      keys: found?.entries ?? 0,
      misses: misses?.entries ?? 0,
      bytes: (found?.bytes ?? 0) + (misses?.bytes ?? 0),
    };
  }

  private put(workspaceId: string, hash: string, key: CachedKey | null): void {
    // A found key's own workspace and hash (the same text) are kept rather than the lookup's copies.
    const ws = key?.workspaceId ?? workspaceId;
    const at = key?.hash ?? hash;
    let others = 0;
    let own: Entry | undefined;
    for (let e = this.index.get(at); e !== undefined; e = e.next) {
      if (e.workspaceId === ws) own = e;
      else others++;
    }
    if (own !== undefined) this.remove(own);
    // Rather than push out another workspace's entry: a hash is rarely in many workspaces.
    if (others >= MAX_WORKSPACES_PER_HASH) return;
    const space = key === null ? this.misses : this.found;
    const entry = new Entry(ws, at, key, this.clock.now(), space.shareOf(ws));
    // An entry larger than its whole room is not kept: that key is looked up at each verification.
    if (entry.bytes > space.maxBytes) {
      if (entry.share.entries === 0) space.shares.delete(ws);
      return;
    }
    entry.next = this.index.get(at);
    this.index.set(at, entry);
    space.append(entry);
    this.makeRoom(entry);
  }

  /**
   * Evicts until the entry's space is within its bounds again: from the
   * entry's own workspace while it is above its share, else from the
   * workspace furthest above its share (one must be, the space being over its
   * bounds), as long as that one stays above it.
   */
  private makeRoom(entry: Entry): void {
    const space = entry.share.space;
    const own = entry.share;
    while (space.full) {
      const from = space.above(own) ? own : space.furthestAbove();
      if (from?.oldest === undefined) return;
      do this.remove(from.oldest!);
      while (space.full && from.entries > 0 && space.above(from));
    }
  }

  private remove(entry: Entry): void {
    if (!entry.cached) return;
    const head = this.index.get(entry.hash);
    if (head === entry) {
      if (entry.next === undefined) this.index.delete(entry.hash);
      else this.index.set(entry.hash, entry.next);
    } else {
      let before = head;
      while (before !== undefined && before.next !== entry) before = before.next;
      if (before !== undefined) before.next = entry.next;
    }
    entry.next = undefined;
    entry.share.space.unlink(entry);
  }
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
