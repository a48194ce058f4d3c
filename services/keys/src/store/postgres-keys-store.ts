import type { Sql } from "@latchkey/runtime";
import type {
  ApiRecord,
  KeyRatelimitRecord,
  KeyRecord,
  KeysStore,
  NewKey,
  RefillInterval,
  RootKeyRecord,
  Spend,
  VerifiableKey,
} from "./keys-store.ts";

interface KeyRow {
  id: string;
  workspace_id: string;
  api_id: string;
  hash: string;
  start: string;
  name: string | null;
  meta_json: string | null;
  external_id: string | null;
  identity_id: string | null;
  permissions: string[];
  roles: string[];
  expires: number | null;
  enabled: boolean;
  remaining: number | null;
  refill_interval: RefillInterval | null;
  refill_amount: number | null;
  refill_day: number | null;
  last_refill_at: number | null;
  created_at: number;
  updated_at: number | null;
  deleted_at: number | null;
  ratelimits: KeyRatelimitRecord[];
}

export class PostgresKeysStore implements KeysStore {
  constructor(private readonly sql: Sql) {}

  async createApi(api: Omit<ApiRecord, "deletedAt">): Promise<void> {
    await this.sql`INSERT INTO apis (id, workspace_id, name, created_at)
      VALUES (${api.id}, ${api.workspaceId}, ${api.name}, ${api.createdAt})`;
  }

  async findApi(id: string): Promise<ApiRecord | undefined> {
    const [row] = await this.sql<
      { id: string; workspace_id: string; name: string; created_at: number; deleted_at: number | null }[]
    >`SELECT id, workspace_id, name, created_at, deleted_at FROM apis WHERE id = ${id}`;
    return (
      row && {
        id: row.id,
        workspaceId: row.workspace_id,
        name: row.name,
        createdAt: row.created_at,
        deletedAt: row.deleted_at,
      }
    );
  }

  async createKey(key: NewKey): Promise<void> {
    await this.sql.begin(async (tx) => {
      await tx`INSERT INTO keys (id, workspace_id, api_id, hash, start, name, meta, external_id, identity_id,
          permissions, roles, expires, enabled, remaining, refill_interval, refill_amount, refill_day, created_at)
        VALUES (${key.id}, ${key.workspaceId}, ${key.apiId}, ${key.hash}, ${key.start}, ${key.name},
          ${key.metaJson}::text::jsonb, ${key.externalId}, ${key.identityId}, ${key.permissions}::text[], ${key.roles}::text[],
          ${key.expires}, ${key.enabled}, ${key.remaining}, ${key.refill?.interval ?? null},
          ${key.refill?.amount ?? null}, ${key.refill?.day ?? null}, ${key.createdAt})`;
      for (const r of key.ratelimits) {
        await tx`INSERT INTO key_ratelimits (id, key_id, name, "limit", duration, auto_apply)
          VALUES (${r.id}, ${key.id}, ${r.name}, ${r.limit}, ${r.duration}, ${r.autoApply})`;
      }
    });
  }

  async findKeyById(id: string): Promise<VerifiableKey | undefined> {
    const [row] = await this.sql<
      (KeyRow & { api_deleted: boolean })[]
    >`${this.selectKeys()} WHERE k.id = ${id}`;
    return row && { ...keyOf(row), apiDeleted: row.api_deleted };
  }

  async findKeyByHash(hash: string): Promise<VerifiableKey | undefined> {
    const [row] = await this.sql<
      (KeyRow & { api_deleted: boolean })[]
    >`${this.selectKeys()} WHERE k.hash = ${hash}`;
    return row && { ...keyOf(row), apiDeleted: row.api_deleted };
  }

  async spendCredits(keyId: string, cost: number): Promise<Spend | undefined> {
    if (cost > 0) {
      // The decrement happens in one statement, so concurrent spenders on any
      // number of processes serialise on the row and never overdraw it.
      const [spent] = await this.sql<{ remaining: number }[]>`UPDATE keys SET remaining = remaining - ${cost}
        WHERE id = ${keyId} AND remaining >= ${cost} RETURNING remaining`;
      if (spent) return { spent: true, remaining: spent.remaining };
    }
    // A new statement, so the balance read is the latest committed one.
    const [row] = await this.sql<
      { remaining: number | null }[]
    >`SELECT remaining FROM keys WHERE id = ${keyId}`;
    if (!row) return undefined;
    if (row.remaining === null) return { spent: true, remaining: null };
    return { spent: cost === 0, remaining: row.remaining };
  }

  async findRootKeyByHash(hash: string): Promise<RootKeyRecord | undefined> {
    const [row] = await this.sql<
      { id: string; workspace_id: string; permissions: string[]; revoked_at: number | null }[]
    >`SELECT id, workspace_id, permissions, revoked_at FROM root_keys WHERE hash = ${hash}`;
    return (
      row && {
        id: row.id,
        workspaceId: row.workspace_id,
        permissions: row.permissions,
        revokedAt: row.revoked_at,
      }
    );
  }

  private selectKeys() {
    return this.sql`SELECT k.id, k.workspace_id, k.api_id, k.hash, k.start, k.name, k.meta::text AS meta_json,
        k.external_id, k.identity_id, k.permissions, k.roles, k.expires, k.enabled, k.remaining,
        k.refill_interval, k.refill_amount, k.refill_day, k.last_refill_at, k.created_at, k.updated_at, k.deleted_at,
        (a.deleted_at IS NOT NULL) AS api_deleted,
        COALESCE((SELECT json_agg(json_build_object('id', r.id, 'name', r.name, 'limit', r."limit",
            'duration', r.duration, 'autoApply', r.auto_apply) ORDER BY r.name)
          FROM key_ratelimits r WHERE r.key_id = k.id), '[]'::json) AS ratelimits
      FROM keys k JOIN apis a ON a.id = k.api_id`;
  }
}

function keyOf(row: KeyRow): KeyRecord {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    apiId: row.api_id,
    hash: row.hash,
    start: row.start,
    name: row.name,
    metaJson: row.meta_json,
    externalId: row.external_id,
    identityId: row.identity_id,
    permissions: row.permissions,
    roles: row.roles,
    expires: row.expires,
    enabled: row.enabled,
    remaining: row.remaining,
    refill:
      row.refill_interval === null
        ? null
        : { interval: row.refill_interval, amount: row.refill_amount ?? 0, day: row.refill_day },
    lastRefillAt: row.last_refill_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    deletedAt: row.deleted_at,
    ratelimits: row.ratelimits,
  };
}
