import type { AuditLogStore, AuditRecord } from "@latchkey/runtime";
import type { AllowList } from "../allow-list.ts";
import type { KeyFormat } from "../leaks/key-format.ts";

/**
 * Storage of the keys context. Times are unix milliseconds; every value fits in
 * a JS number (see packages/runtime/src/db.ts). Stores know nothing of Connect or HTTP.
 */

export interface ApiRecord {
  id: string;
  workspaceId: string;
  name: string;
  createdAt: number;
  deletedAt: number | null;
  /** What its new keys look like (leaks/key-format.ts); absent: "plain". */
  keyFormat?: KeyFormat;
  /** What a leak report does to its keys (leaks/leak-reports.ts); absent: "revoke". */
  leakPolicy?: LeakPolicy;
  /** CIDRs its keys may be verified from (allow-list.ts); absent or empty: any. */
  ipAllowList?: string[];
  /** Days before a key's expiry key.expiring announces it (notices/expiring.ts); absent: 7; 0: never. */
  expiringNoticeDays?: number;
  /** Its keys' default credits.low thresholds in percent (credit-thresholds.ts); absent or null: CREDITS_LOW_FRACTION. */
  creditThresholds?: number[] | null;
}

/** The settings apis.updateApi may change; each absent one stays. */
export type ApiPatch = Partial<
  Pick<
    ApiRecord,
    "name" | "keyFormat" | "leakPolicy" | "ipAllowList" | "expiringNoticeDays" | "creditThresholds"
  >
>;

/** "revoke": a leaked key is disabled; "flag": it keeps working, and the leak is announced. */
export type LeakPolicy = "revoke" | "flag";

/** A live key a leak report names, in any workspace, with what its API says to do. */
export interface LeakTarget {
  id: string;
  workspaceId: string;
  apiId: string;
  hash: string;
  leakPolicy: LeakPolicy;
  /** When a leak of it was first detected; null when never. */
  leakedAt: number | null;
}

export type RefillInterval = "daily" | "monthly";

export interface RefillRecord {
  interval: RefillInterval;
  amount: number;
  /** Monthly only; null for daily. */
  day: number | null;
}

export interface KeyRatelimitRecord {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
}

export interface KeyRecord {
  id: string;
  workspaceId: string;
  apiId: string;
  /** Standard base64 of SHA-256 of the plaintext; the plaintext is never stored. */
  hash: string;
  start: string;
  name: string | null;
  /** The meta object as JSON text. */
  metaJson: string | null;
  externalId: string | null;
  identityId: string | null;
  /** Direct permission slugs. */
  permissions: string[];
  /** Role names. */
  roles: string[];
  expires: number | null;
  enabled: boolean;
  /** null means unlimited. */
  remaining: number | null;
  refill: RefillRecord | null;
  lastRefillAt: number | null;
  createdAt: number;
  updatedAt: number | null;
  /** The last verification as last written (last-used.ts); null when never verified. */
  lastUsedAt: number | null;
  deletedAt: number | null;
  ratelimits: KeyRatelimitRecord[];
  /** Size of the random part it was generated with; null for imported keys. */
  byteLength: number | null;
  /** Its plaintext is kept encrypted (see EncryptedKeyRecord). */
  recoverable: boolean;
  /** CIDRs it may be verified from (allow-list.ts); absent or empty: any. */
  ipAllowList?: string[];
  /** When a leak report first named it (leaks/leak-reports.ts); absent or null: never. */
  leakedAt?: number | null;
  /** Its credits.low thresholds in percent (credit-thresholds.ts); absent or null: its API's. */
  creditThresholds?: number[] | null;
}

/** A key as verification needs it: the record plus whether its API is deleted. */
export interface VerifiableKey extends KeyRecord {
  apiDeleted: boolean;
}

/**
 * A key as the verification cache holds it: only what a verification reads
 * (no dates, refill schedule or recoverability), so a cache miss decodes and
 * keeps less.
 */
export type CachedKey = Pick<
  VerifiableKey,
  | "id"
  | "workspaceId"
  | "apiId"
  | "hash"
  | "name"
  | "metaJson"
  | "externalId"
  | "identityId"
  | "permissions"
  | "roles"
  | "expires"
  | "enabled"
  | "remaining"
  | "deletedAt"
  | "ratelimits"
  | "apiDeleted"
> & {
  /** Its API's and its own IP allow-lists, parsed once with the record; null or absent: none. */
  allowList?: AllowList | null;
  /** Its own credits.low thresholds in percent, else its API's; null or absent: CREDITS_LOW_FRACTION. */
  creditThresholds?: readonly number[] | null;
};

export interface RootKeyRecord {
  id: string;
  workspaceId: string;
  permissions: string[];
  revokedAt: number | null;
}

export type NewKey = Omit<
  KeyRecord,
  "updatedAt" | "lastUsedAt" | "deletedAt" | "lastRefillAt" | "recoverable"
> & {
  /** Set by reroll, which carries the refill schedule over. */
  lastRefillAt?: number | null;
};

/** A recoverable key's plaintext, AES-256-GCM encrypted, stored apart from its hash. */
export interface EncryptedKeyRecord {
  keyId: string;
  workspaceId: string;
  /** Base64 of ciphertext, IV and authentication tag. */
  ciphertext: string;
  iv: string;
  tag: string;
  /** Which key-encryption key sealed it. */
  kekId: string;
}

/** What updateKey changes; an absent field is left as it is. */
export interface KeyPatch {
  name?: string | null;
  metaJson?: string | null;
  externalId?: string | null;
  identityId?: string | null;
  expires?: number | null;
  enabled?: boolean;
  remaining?: number | null;
  refill?: RefillRecord | null;
  lastRefillAt?: number | null;
  permissions?: string[];
  roles?: string[];
  /** The whole new set; ids are given by the caller (a name that stays keeps its id). */
  ratelimits?: KeyRatelimitRecord[];
  /** The whole new IP allow-list; empty clears it. */
  ipAllowList?: string[];
  /** The whole new list of credits.low thresholds; null: its API's again. */
  creditThresholds?: number[] | null;
  updatedAt: number;
}

/** A key was verified at `at` (unix ms). */
export interface KeyUse {
  keyId: string;
  at: number;
}

/** The name lists of a key that keys.add/remove/set(Permissions|Roles) change. */
export type KeyList = "permissions" | "roles";

/** A role or permission the identity service deleted, as keys name it. */
export interface DeletedGrant {
  /** The deleted role's or permission's id: each deletion is applied once. */
  id: string;
  workspaceId: string;
  /** roles for a role, permissions for a permission. */
  list: KeyList;
  /** The role's name or the permission's slug. */
  name: string;
}

export type CreditsOperation = "set" | "increment" | "decrement";

/** A key's credits after an update. remaining null: unlimited. */
export interface CreditsState {
  remaining: number | null;
  refill: RefillRecord | null;
}

/** `count` verifications of one key, each spending `cost`, in request order. */
export interface SpendGroup {
  keyId: string;
  cost: number;
  count: number;
}

/**
 * The outcome of a SpendGroup: the first `granted` verifications spent, the
 * rest did not. before: the balance they started from (after any due refill);
 * null when the key is unlimited.
 */
export interface GroupSpend {
  granted: number;
  before: number | null;
  /**
   * What credits.low is a fraction of (credit-events.ts): the refill amount of a
   * refilling key, else the balance it was last given (createKey, updateKey,
   * updateCredits "set"); null when unknown or unlimited. Optional: stores made
   * for tests may leave it out, and then nothing is announced.
   */
  baseline?: number | null;
  /**
   * When the key's credit period began (unix ms): its last refill (or creation) for a
   * refilling key, else when its balance was last given. Low and exhausted are announced
   * once per key and period.
   */
  period?: number;
}

export interface KeyPage {
  keys: KeyRecord[];
  /** The id to continue after, when there are more. */
  next: string | null;
}

/**
 * The outcome of spending credits: spent and the balance after, or not spent
 * and the unchanged balance. remaining null: the key has become unlimited.
 */
export interface Spend {
  spent: boolean;
  remaining: number | null;
  /** Only on the one spend of a period that took the balance below the low threshold or to 0. */
  crossed?: CreditsCrossing;
  /**
   * A spent balance's GroupSpend.baseline and period, for a key's own thresholds
   * (credit-thresholds.ts); absent where the store does not say.
   */
  baseline?: number | null;
  period?: number;
}

/** What a spend crossed in its key's credit period (credit-events.ts announces it). */
export interface CreditsCrossing {
  /** GroupSpend.period. */
  period: number;
  /** The threshold the balance fell below with this spend, or undefined when it did not. */
  low: number | undefined;
  /** This spend took the balance to 0. */
  exhausted: boolean;
}

/** A key as verification looks it up: by its hash, within the caller's workspace. */
export interface KeyLookup {
  workspaceId: string;
  hash: string;
}

/**
 * Every mutation a management operation makes takes its audit record (`audit`) and writes it in
 * the change's own transaction, only when the change is made: a change without its record, or a
 * record without its change, cannot happen (packages/runtime/src/audit.ts).
 */
export interface KeysStore extends AuditLogStore {
  createApi(api: Omit<ApiRecord, "deletedAt">, audit?: AuditRecord): Promise<void>;
  findApi(id: string): Promise<ApiRecord | undefined>;
  /** Whether a key of the API, not deleted, is recoverable (has its encrypted plaintext stored). */
  holdsRecoverableKeys(apiId: string): Promise<boolean>;
  /**
   * The workspace's live APIs ordered by id, after the id `after`, at most
   * `limit`; only those of `ids` when given (the ones the caller may read).
   */
  listApis(
    workspaceId: string,
    options: { limit: number; after: string; ids?: readonly string[] },
  ): Promise<{ apis: ApiRecord[]; next: string | null }>;
  /** Changes a live API's settings (those present in `patch`); undefined when it is gone. */
  updateApi(id: string, patch: ApiPatch, audit?: AuditRecord): Promise<ApiRecord | undefined>;
  /** Marks an API deleted; its keys stop verifying. false when it was already gone. */
  deleteApi(id: string, at: number, audit?: AuditRecord): Promise<boolean>;
  /** Inserts the key, its rate limits and, for a recoverable key, its encrypted plaintext together. */
  createKey(key: NewKey, encrypted?: EncryptedKeyRecord, audit?: AuditRecord): Promise<void>;
  /**
   * Inserts each key whose hash is new in its workspace; true where it was
   * inserted, false where the workspace holds the hash already. Another
   * workspace's keys never make it fail: a hash is unique per workspace.
   * `audit` is written only when at least one key was inserted.
   */
  importKeys(keys: NewKey[], audit?: (inserted: NewKey[]) => AuditRecord): Promise<boolean[]>;
  /**
   * Live keys of an API ordered by id, after the id `after`, at most `limit`,
   * optionally only those of one externalId.
   */
  listKeys(apiId: string, options: { limit: number; after: string; externalId?: string }): Promise<KeyPage>;
  /** Applies the patch atomically with respect to credit spends; undefined when the key is gone. */
  updateKey(id: string, patch: KeyPatch, audit?: AuditRecord): Promise<VerifiableKey | undefined>;
  /**
   * Adds to and removes from a key's direct permission slugs or role names in
   * one atomic step, so concurrent changes all land: `add` entries it lacks are
   * appended in order, `remove` entries are dropped (remove wins over add),
   * duplicates never arise. Sets updatedAt to `at`. undefined when the key is gone.
   */
  changeKeyList(
    id: string,
    list: KeyList,
    change: { add: readonly string[]; remove: readonly string[] },
    at: number,
    audit?: AuditRecord,
  ): Promise<VerifiableKey | undefined>;
  /**
   * Takes a deleted role's name or permission's slug off every key of its
   * workspace in one statement, once per deletion however many instances ask
   * (the first records its id, the others change nothing). Answers the hashes
   * of the keys it changed; undefined when the deletion was already applied.
   * updatedAt is left alone: the key did not change, what it named went away.
   */
  removeDeletedGrant(deleted: DeletedGrant, at: number): Promise<string[] | undefined>;
  /**
   * set, increment or decrement the balance in one statement, after applying
   * a refill due at `at`. Decrement stops at 0; set null makes the key
   * unlimited and clears its refill. "unlimited": increment or decrement of
   * an unlimited key, nothing changed. undefined: the key is gone.
   */
  updateCredits(
    id: string,
    operation: CreditsOperation,
    value: number | null,
    at: number,
    audit?: AuditRecord,
  ): Promise<CreditsState | "unlimited" | undefined>;
  /**
   * Ordinary deletion marks the key deleted; permanent deletion removes the row, its hash and its secrets.
   * False, with no audit record, when nothing changed (the key was already deleted, e.g. by a concurrent call).
   */
  deleteKey(id: string, permanent: boolean, at: number, audit?: AuditRecord): Promise<boolean>;
  /**
   * Creates `key` as the successor of `originalId` in one transaction: it takes
   * the original's current balance and refill state, and the original now
   * expires at `originalExpires`.
   */
  rerollKey(
    key: NewKey,
    encrypted: EncryptedKeyRecord | undefined,
    originalId: string,
    originalExpires: number,
    audit?: AuditRecord,
  ): Promise<void>;
  findEncryptedKey(keyId: string): Promise<EncryptedKeyRecord | undefined>;
  findKeyById(id: string): Promise<VerifiableKey | undefined>;
  /** The workspace's key with this hash (a hash is unique per workspace, not across them). */
  findKeyByHash(workspaceId: string, hash: string): Promise<VerifiableKey | undefined>;
  /**
   * The keys of these lookups (each a workspace and a hash), in any order, with the fields verification
   * reads (one query: a verification batch's cache misses). Deleted keys and keys of deleted APIs too, as
   * findKeyByHash.
   */
  findKeysByHash(lookups: readonly KeyLookup[]): Promise<CachedKey[]>;
  /**
   * Spends `cost` credits of a limited key atomically: either the balance was
   * at least `cost` and is now lower by exactly `cost`, or nothing was spent.
   * A refill due at `at` is applied first, in the same statement. Cost 0 only
   * reads the balance. undefined when the key is gone or deleted.
   */
  spendCredits(keyId: string, cost: number, at: number): Promise<Spend | undefined>;
  /**
   * Many spends at once (a verification batch): per group, the first
   * min(count, floor(balance / cost)) succeed, exactly as if they had come one
   * by one. One statement for all groups on PostgreSQL. Keys must be distinct.
   */
  spendCreditsGroups(groups: SpendGroup[], at: number): Promise<(GroupSpend | undefined)[]>;
  /**
   * Moves each key's lastUsedAt forward to its use, never back (a later use
   * already written stays). One statement for all; keys gone are skipped.
   */
  recordLastUsed(uses: readonly KeyUse[]): Promise<void>;
  /**
   * Applies the refills due at `at`, of at most `limit` keys (in id order)
   * when given, in one statement; answers how many keys were refilled.
   */
  applyDueRefills(at: number, limit?: number): Promise<number>;
  findRootKeyByHash(hash: string): Promise<RootKeyRecord | undefined>;
  /**
   * The live keys (not deleted, under a live API) with this hash in every workspace: a leaked key
   * string may belong to any of them (leaks/leak-reports.ts).
   */
  findLeakTargets(hash: string): Promise<LeakTarget[]>;
  /**
   * Records the key's leak at `at`, disabling it when `revoke`, only if no leak of it was recorded
   * before (one statement, so one replica wins); `audit` is written with it. false: already recorded, or gone.
   */
  markLeaked(keyId: string, at: number, revoke: boolean, audit?: AuditRecord): Promise<boolean>;
}
