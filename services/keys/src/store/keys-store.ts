/**
 * Storage of the keys context. Times are unix milliseconds; every value fits in
 * a JS number (see runtime/db.ts). Stores know nothing of Connect or HTTP.
 */

export interface ApiRecord {
  id: string;
  workspaceId: string;
  name: string;
  createdAt: number;
  deletedAt: number | null;
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
  deletedAt: number | null;
  ratelimits: KeyRatelimitRecord[];
}

/** A key as verification needs it: the record plus whether its API is deleted. */
export interface VerifiableKey extends KeyRecord {
  apiDeleted: boolean;
}

export interface RootKeyRecord {
  id: string;
  workspaceId: string;
  permissions: string[];
  revokedAt: number | null;
}

export type NewKey = Omit<KeyRecord, "updatedAt" | "deletedAt" | "lastRefillAt">;

/**
 * The outcome of spending credits: spent and the balance after, or not spent
 * and the unchanged balance. remaining null: the key has become unlimited.
 */
export interface Spend {
  spent: boolean;
  remaining: number | null;
}

export interface KeysStore {
  createApi(api: Omit<ApiRecord, "deletedAt">): Promise<void>;
  findApi(id: string): Promise<ApiRecord | undefined>;
  /** Inserts the key and its rate limits together. */
  createKey(key: NewKey): Promise<void>;
  findKeyById(id: string): Promise<VerifiableKey | undefined>;
  findKeyByHash(hash: string): Promise<VerifiableKey | undefined>;
  /**
   * Spends `cost` credits of a limited key atomically: either the balance was
   * at least `cost` and is now lower by exactly `cost`, or nothing changed.
   * Cost 0 only reads the balance. undefined when the key is gone.
   */
  spendCredits(keyId: string, cost: number): Promise<Spend | undefined>;
  findRootKeyByHash(hash: string): Promise<RootKeyRecord | undefined>;
}
