import { type AuditQuery, type AuditRecord, MemoryAuditLog } from "@latchkey/runtime";
import { AllowList } from "../allow-list.ts";
import { dueRefill } from "../refills.ts";
import type {
  ApiPatch,
  ApiRecord,
  CachedKey,
  CreditsOperation,
  CreditsState,
  DeletedGrant,
  EncryptedKeyRecord,
  GroupSpend,
  KeyList,
  KeyLookup,
  KeyPage,
  KeyPatch,
  KeyRecord,
  KeysStore,
  KeyUse,
  LeakTarget,
  NewKey,
  RootKeyRecord,
  Spend,
  SpendGroup,
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
  /** Key ids by workspace and hash (byHash): a hash is unique per workspace. */
  private readonly keyIdByHash = new Map<string, string>();
  private readonly rootKeys = new Map<string, RootKeyRecord & { hash: string }>();
  private readonly encrypted = new Map<string, EncryptedKeyRecord>();
  private readonly appliedDeletions = new Set<string>();
  /** The balance each key was last given and when (GroupSpend.baseline and period), as PostgreSQL's credits_given. */
  private readonly given = new Map<string, { amount: number | null; at: number }>();
  /** When each key's leak was recorded (PostgreSQL's leaked_at). */
  private readonly leaked = new Map<string, number>();
  /** The audit records each mutation writes with its change (tests read them here). */
  readonly audit = new MemoryAuditLog();

  recordAudit(record: AuditRecord): Promise<void> {
    return this.audit.recordAudit(record);
  }

  listAudit(workspaceId: string, query: AuditQuery): Promise<AuditRecord[]> {
    return this.audit.listAudit(workspaceId, query);
  }

  async createApi(api: Omit<ApiRecord, "deletedAt">, audit?: AuditRecord): Promise<void> {
    this.apis.set(api.id, {
      keyFormat: "plain",
      leakPolicy: "revoke",
      ipAllowList: [],
      expiringNoticeDays: 7,
      creditThresholds: null,
      ...api,
      deletedAt: null,
    });
    this.audit.add(audit);
  }

  async listApis(
    workspaceId: string,
    options: { limit: number; after: string; ids?: readonly string[] },
  ): Promise<{ apis: ApiRecord[]; next: string | null }> {
    const { after, ids } = options;
    const all = [...this.apis.values()]
      .filter(
        (a) =>
          a.workspaceId === workspaceId &&
          a.deletedAt === null &&
          a.id > after &&
          (ids === undefined || ids.includes(a.id)),
      )
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    // The fields PostgreSQL's list reads: a list needs none of Latchkey's additions.
    const apis = all.slice(0, options.limit).map((a) => ({
      id: a.id,
      workspaceId: a.workspaceId,
      name: a.name,
      createdAt: a.createdAt,
      deletedAt: a.deletedAt,
    }));
    return { apis, next: all.length > options.limit ? (apis.at(-1)?.id ?? null) : null };
  }

  async findApi(id: string): Promise<ApiRecord | undefined> {
    const api = this.apis.get(id);
    return api && { ...api };
  }

  async holdsRecoverableKeys(apiId: string): Promise<boolean> {
    for (const id of this.encrypted.keys()) {
      const key = this.keys.get(id);
      if (key && key.apiId === apiId && key.deletedAt === null) return true;
    }
    return false;
  }

  async updateApi(id: string, patch: ApiPatch, audit?: AuditRecord): Promise<ApiRecord | undefined> {
    const api = this.apis.get(id);
    if (!api || api.deletedAt !== null) return undefined;
    for (const [field, value] of Object.entries(patch)) {
      if (value !== undefined) Object.assign(api, { [field]: Array.isArray(value) ? [...value] : value });
    }
    this.audit.add(audit);
    return { ...api };
  }

  async deleteApi(id: string, at: number, audit?: AuditRecord): Promise<boolean> {
    const api = this.apis.get(id);
    if (!api || api.deletedAt !== null) return false;
    api.deletedAt = at;
    this.audit.add(audit);
    return true;
  }

  async createKey(key: NewKey, encrypted?: EncryptedKeyRecord, audit?: AuditRecord): Promise<void> {
    if (this.keyIdByHash.has(byHash(key))) throw new Error("duplicate key hash");
    const names = new Set(key.ratelimits.map((r) => r.name));
    if (names.size !== key.ratelimits.length) throw new Error("duplicate ratelimit name");
    this.keys.set(key.id, {
      ...structuredClone(key),
      lastRefillAt: key.lastRefillAt ?? null,
      updatedAt: null,
      lastUsedAt: null,
      deletedAt: null,
      recoverable: encrypted !== undefined,
    });
    this.keyIdByHash.set(byHash(key), key.id);
    this.given.set(key.id, { amount: key.remaining, at: key.createdAt });
    if (encrypted) this.encrypted.set(key.id, { ...encrypted });
    this.audit.add(audit);
  }

  async importKeys(keys: NewKey[], audit?: (inserted: NewKey[]) => AuditRecord): Promise<boolean[]> {
    const inserted: boolean[] = [];
    for (const key of keys) {
      if (this.keyIdByHash.has(byHash(key))) {
        inserted.push(false);
        continue;
      }
      await this.createKey(key);
      inserted.push(true);
    }
    if (inserted.includes(true)) this.audit.add(audit?.(keys.filter((_, i) => inserted[i])));
    return inserted;
  }

  async listKeys(
    apiId: string,
    options: { limit: number; after: string; externalId?: string },
  ): Promise<KeyPage> {
    const live = [...this.keys.values()]
      .filter(
        (k) =>
          k.apiId === apiId &&
          k.deletedAt === null &&
          k.id > options.after &&
          (options.externalId === undefined || k.externalId === options.externalId),
      )
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const keys = live.slice(0, options.limit).map((k) => structuredClone(k));
    return { keys, next: live.length > options.limit ? (keys.at(-1)?.id ?? null) : null };
  }

  async updateKey(id: string, patch: KeyPatch, audit?: AuditRecord): Promise<VerifiableKey | undefined> {
    const key = this.keys.get(id);
    if (!key) return undefined;
    const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    Object.assign(key, structuredClone(defined));
    if (patch.remaining !== undefined) this.given.set(id, { amount: key.remaining, at: patch.updatedAt });
    this.audit.add(audit);
    return this.findKeyById(id);
  }

  async changeKeyList(
    id: string,
    list: KeyList,
    change: { add: readonly string[]; remove: readonly string[] },
    at: number,
    audit?: AuditRecord,
  ): Promise<VerifiableKey | undefined> {
    const key = this.keys.get(id);
    if (!key) return undefined;
    const removed = new Set(change.remove);
    key[list] = [...new Set([...key[list], ...change.add])].filter((v) => !removed.has(v));
    key.updatedAt = at;
    this.audit.add(audit);
    return this.findKeyById(id);
  }

  async removeDeletedGrant(deleted: DeletedGrant, _at: number): Promise<string[] | undefined> {
    if (this.appliedDeletions.has(deleted.id)) return undefined;
    this.appliedDeletions.add(deleted.id);
    const hashes: string[] = [];
    for (const key of this.keys.values()) {
      if (key.workspaceId !== deleted.workspaceId || !key[deleted.list].includes(deleted.name)) continue;
      key[deleted.list] = key[deleted.list].filter((n) => n !== deleted.name);
      hashes.push(key.hash);
    }
    return hashes;
  }

  async updateCredits(
    id: string,
    operation: CreditsOperation,
    value: number | null,
    at: number,
    audit?: AuditRecord,
  ): Promise<CreditsState | "unlimited" | undefined> {
    const key = this.keys.get(id);
    if (!key) return undefined;
    if (operation !== "set" && key.remaining === null) return "unlimited";
    this.settleRefill(key, at);
    switch (operation) {
      case "set":
        key.remaining = value;
        if (value === null) key.refill = null;
        this.given.set(id, { amount: value, at });
        break;
      case "increment":
        key.remaining = (key.remaining ?? 0) + (value ?? 0);
        break;
      case "decrement":
        key.remaining = Math.max(0, (key.remaining ?? 0) - (value ?? 0));
        break;
      default: {
        const never: never = operation;
        throw new Error(`unknown operation ${never}`);
      }
    }
    key.updatedAt = at;
    this.audit.add(audit);
    return { remaining: key.remaining, refill: key.refill && { ...key.refill } };
  }

  async deleteKey(id: string, permanent: boolean, at: number, audit?: AuditRecord): Promise<boolean> {
    const key = this.keys.get(id);
    if (!key) return false;
    if (!permanent) {
      if (key.deletedAt !== null) return false;
      key.deletedAt = at;
      this.audit.add(audit);
      return true;
    }
    this.keys.delete(id);
    this.given.delete(id);
    this.keyIdByHash.delete(byHash(key));
    this.encrypted.delete(id);
    this.audit.add(audit);
    return true;
  }

  async rerollKey(
    key: NewKey,
    encrypted: EncryptedKeyRecord | undefined,
    originalId: string,
    originalExpires: number,
    audit?: AuditRecord,
  ): Promise<void> {
    const original = this.keys.get(originalId);
    if (!original) throw new Error(`no key ${originalId}`);
    await this.createKey(
      { ...key, remaining: original.remaining, lastRefillAt: original.lastRefillAt },
      encrypted,
    );
    const given = this.given.get(originalId);
    if (given) this.given.set(key.id, { ...given });
    original.expires = originalExpires;
    this.audit.add(audit);
  }

  async findEncryptedKey(keyId: string): Promise<EncryptedKeyRecord | undefined> {
    const e = this.encrypted.get(keyId);
    return e && { ...e };
  }

  async findKeyById(id: string): Promise<VerifiableKey | undefined> {
    const key = this.keys.get(id);
    if (!key) return undefined;
    const api = this.apis.get(key.apiId);
    return { ...structuredClone(key), apiDeleted: !api || api.deletedAt !== null };
  }

  async findKeyByHash(workspaceId: string, hash: string): Promise<VerifiableKey | undefined> {
    const id = this.keyIdByHash.get(byHash({ workspaceId, hash }));
    return id === undefined ? undefined : this.findKeyById(id);
  }

  async findKeysByHash(lookups: readonly KeyLookup[]): Promise<CachedKey[]> {
    const found: CachedKey[] = [];
    for (const id of new Set(lookups.map(byHash))) {
      const [workspaceId, hash] = id.split("\n") as [string, string];
      const key = await this.findKeyByHash(workspaceId, hash);
      if (key)
        found.push({
          ...key,
          allowList: AllowList.of(this.apis.get(key.apiId)?.ipAllowList, key.ipAllowList),
          creditThresholds: key.creditThresholds ?? this.apis.get(key.apiId)?.creditThresholds ?? null,
        });
    }
    return found;
  }

  async spendCredits(keyId: string, cost: number, at: number): Promise<Spend | undefined> {
    const [group] = await this.spendCreditsGroups([{ keyId, cost, count: 1 }], at);
    if (group === undefined) return undefined;
    if (group.before === null) return { spent: true, remaining: null };
    return group.granted === 1
      ? { spent: true, remaining: group.before - cost }
      : { spent: false, remaining: group.before };
  }

  async spendCreditsGroups(groups: SpendGroup[], at: number): Promise<(GroupSpend | undefined)[]> {
    return groups.map(({ keyId, cost, count }) => {
      const key = this.keys.get(keyId);
      if (!key || key.deletedAt !== null) return undefined;
      this.settleRefill(key, at);
      const given = this.given.get(keyId);
      const credits =
        key.refill === null
          ? { baseline: given?.amount ?? null, period: given?.at ?? key.createdAt }
          : { baseline: key.refill.amount, period: key.lastRefillAt ?? key.createdAt };
      if (key.remaining === null) return { granted: count, before: null, ...credits };
      const before = key.remaining;
      const granted = cost === 0 ? count : Math.min(count, Math.floor(before / cost));
      key.remaining = before - granted * cost;
      return { granted, before, ...credits };
    });
  }

  async recordLastUsed(uses: readonly KeyUse[]): Promise<void> {
    for (const { keyId, at } of uses) {
      const key = this.keys.get(keyId);
      if (key) key.lastUsedAt = Math.max(key.lastUsedAt ?? 0, at);
    }
  }

  async applyDueRefills(at: number, limit = Number.POSITIVE_INFINITY): Promise<number> {
    let refilled = 0;
    const byId = [...this.keys.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (const key of byId) {
      if (refilled >= limit) break;
      if (key.deletedAt === null && this.settleRefill(key, at)) refilled++;
    }
    return refilled;
  }

  /** Applies a refill due at `at`; true when it did. */
  private settleRefill(key: KeyRecord, at: number): boolean {
    const due = dueRefill(key, at);
    if (due === null || key.refill === null) return false;
    key.remaining = key.refill.amount;
    key.lastRefillAt = due;
    return true;
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

  async findLeakTargets(hash: string): Promise<LeakTarget[]> {
    return [...this.keys.values()]
      .filter((k) => k.hash === hash && k.deletedAt === null && this.apis.get(k.apiId)?.deletedAt === null)
      .map((k) => ({
        id: k.id,
        workspaceId: k.workspaceId,
        apiId: k.apiId,
        hash: k.hash,
        leakPolicy: this.apis.get(k.apiId)?.leakPolicy ?? "revoke",
        leakedAt: this.leaked.get(k.id) ?? null,
      }));
  }

  async markLeaked(keyId: string, at: number, revoke: boolean, audit?: AuditRecord): Promise<boolean> {
    const key = this.keys.get(keyId);
    if (!key || key.deletedAt !== null || this.leaked.has(keyId)) return false;
    this.leaked.set(keyId, at);
    key.leakedAt = at;
    key.updatedAt = at;
    if (revoke) key.enabled = false;
    this.audit.add(audit);
    return true;
  }

  // Seeding and mutation for tests.

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

/** Where keyIdByHash keeps a key: its workspace and its hash. */
const byHash = (k: KeyLookup) => `${k.workspaceId}\n${k.hash}`;
