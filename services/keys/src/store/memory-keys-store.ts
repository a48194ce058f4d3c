import type {
  ApiRecord,
  KeyRecord,
  KeysStore,
  NewKey,
  RootKeyRecord,
  Spend,
  VerifiableKey,
} from "./keys-store.ts";

/**
 * The in-memory store for tests. Credits are spent synchronously inside one
 * call, so they are exact within the process, as PostgreSQL makes them across
 * processes.
 */
export class MemoryKeysStore implements KeysStore {
  private readonly apis = new Map<string, ApiRecord>();
  private readonly keys = new Map<string, KeyRecord>();
  private readonly keyIdByHash = new Map<string, string>();
  private readonly rootKeys = new Map<string, RootKeyRecord & { hash: string }>();

  async createApi(api: Omit<ApiRecord, "deletedAt">): Promise<void> {
    this.apis.set(api.id, { ...api, deletedAt: null });
  }

  async findApi(id: string): Promise<ApiRecord | undefined> {
    const api = this.apis.get(id);
    return api && { ...api };
  }

  async createKey(key: NewKey): Promise<void> {
    if (this.keyIdByHash.has(key.hash)) throw new Error("duplicate key hash");
    const names = new Set(key.ratelimits.map((r) => r.name));
    if (names.size !== key.ratelimits.length) throw new Error("duplicate ratelimit name");
    this.keys.set(key.id, { ...structuredClone(key), updatedAt: null, deletedAt: null, lastRefillAt: null });
    this.keyIdByHash.set(key.hash, key.id);
  }

  async findKeyById(id: string): Promise<VerifiableKey | undefined> {
    const key = this.keys.get(id);
    if (!key) return undefined;
    const api = this.apis.get(key.apiId);
    return { ...structuredClone(key), apiDeleted: !api || api.deletedAt !== null };
  }

  async findKeyByHash(hash: string): Promise<VerifiableKey | undefined> {
    const id = this.keyIdByHash.get(hash);
    return id === undefined ? undefined : this.findKeyById(id);
  }

  async spendCredits(keyId: string, cost: number): Promise<Spend | undefined> {
    const key = this.keys.get(keyId);
    if (!key) return undefined;
    if (key.remaining === null) return { spent: true, remaining: null };
    if (key.remaining < cost) return { spent: false, remaining: key.remaining };
    key.remaining -= cost;
    return { spent: true, remaining: key.remaining };
  }

  async findRootKeyByHash(hash: string): Promise<RootKeyRecord | undefined> {
    for (const rk of this.rootKeys.values()) {
      if (rk.hash === hash)
        return {
          id: rk.id,
          workspaceId: rk.workspaceId,
          permissions: [...rk.permissions],
          revokedAt: rk.revokedAt,
        };
    }
    return undefined;
  }

  // Seeding and mutation for tests: the RPCs that change these arrive with issue 3.

  putRootKey(rootKey: RootKeyRecord & { hash: string }): void {
    this.rootKeys.set(rootKey.id, { ...rootKey });
  }

  patchKey(id: string, patch: Partial<KeyRecord>): void {
    const key = this.keys.get(id);
    if (!key) throw new Error(`no key ${id}`);
    Object.assign(key, patch);
  }

  patchApi(id: string, patch: Partial<ApiRecord>): void {
    const api = this.apis.get(id);
    if (!api) throw new Error(`no api ${id}`);
    Object.assign(api, patch);
  }
}
