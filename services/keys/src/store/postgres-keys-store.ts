import {
  type AuditRecord,
  insertAudit,
  PostgresAuditedStore,
  type Sql,
  type TransactionSql,
} from "@latchkey/runtime";
import { AllowList } from "../allow-list.ts";
import type { KeyFormat } from "../leaks/key-format.ts";
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
  KeyRatelimitRecord,
  KeyRecord,
  KeysStore,
  KeyUse,
  LeakPolicy,
  LeakTarget,
  NewKey,
  RefillInterval,
  RootKeyRecord,
  Spend,
  SpendGroup,
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
  last_used_at: number | null;
  deleted_at: number | null;
  ratelimits: KeyRatelimitRecord[];
  byte_length: number | null;
  recoverable: boolean;
  ip_allow_list: string[];
  leaked_at: number | null;
  credit_thresholds: number[] | null;
}

type CachedKeyRow = Pick<
  KeyRow,
  | "id"
  | "workspace_id"
  | "api_id"
  | "hash"
  | "name"
  | "meta_json"
  | "external_id"
  | "identity_id"
  | "permissions"
  | "roles"
  | "expires"
  | "enabled"
  | "remaining"
  | "deleted_at"
  | "ratelimits"
  | "ip_allow_list"
> & { api_deleted: boolean; api_ip_allow_list: string[]; thresholds_in_effect: number[] | null };

interface CreditsRow {
  remaining: number | null;
  refill_interval: RefillInterval | null;
  refill_amount: number | null;
  refill_day: number | null;
}

/** The keys context's audit records (migrations.ts, version 8). */
export const KEYS_AUDIT_TABLE = "keys_audit_log";

export class PostgresKeysStore extends PostgresAuditedStore implements KeysStore {
  constructor(sql: Sql) {
    super(sql, KEYS_AUDIT_TABLE);
  }

  async createApi(api: Omit<ApiRecord, "deletedAt">, audit?: AuditRecord): Promise<void> {
    await this.audited(audit, async (tx) => {
      await tx`INSERT INTO apis (id, workspace_id, name, created_at, key_format, leak_policy, ip_allow_list,
          expiring_notice_days, credit_thresholds)
        VALUES (${api.id}, ${api.workspaceId}, ${api.name}, ${api.createdAt},
          ${api.keyFormat ?? "plain"}, ${api.leakPolicy ?? "revoke"}, ${api.ipAllowList ?? []}::text[],
          ${api.expiringNoticeDays ?? 7}, ${api.creditThresholds ?? null}::smallint[])`;
    });
  }

  async listApis(
    workspaceId: string,
    options: { limit: number; after: string; ids?: readonly string[] },
  ): Promise<{ apis: ApiRecord[]; next: string | null }> {
    const rows = await this.sql<
      { id: string; workspace_id: string; name: string; created_at: number; deleted_at: number | null }[]
    >`SELECT id, workspace_id, name, created_at, deleted_at FROM apis
      WHERE workspace_id = ${workspaceId} AND deleted_at IS NULL AND id > ${options.after}
        ${options.ids === undefined ? this.sql`` : this.sql`AND id = ANY(${options.ids as string[]}::text[])`}
      ORDER BY id LIMIT ${options.limit + 1}`;
    const apis = rows.slice(0, options.limit).map((row) => ({
      id: row.id,
      workspaceId: row.workspace_id,
      name: row.name,
      createdAt: Number(row.created_at),
      deletedAt: row.deleted_at,
    }));
    return { apis, next: rows.length > options.limit ? (apis.at(-1)?.id ?? null) : null };
  }

  async findApi(id: string): Promise<ApiRecord | undefined> {
    const [row] = await this.sql<
      {
        id: string;
        workspace_id: string;
        name: string;
        created_at: number;
        deleted_at: number | null;
        key_format: KeyFormat;
        leak_policy: LeakPolicy;
        ip_allow_list: string[];
        expiring_notice_days: number;
        credit_thresholds: number[] | null;
      }[]
    >`SELECT id, workspace_id, name, created_at, deleted_at, key_format, leak_policy, ip_allow_list,
        expiring_notice_days, credit_thresholds FROM apis WHERE id = ${id}`;
    return (
      row && {
        id: row.id,
        workspaceId: row.workspace_id,
        name: row.name,
        createdAt: row.created_at,
        deletedAt: row.deleted_at,
        keyFormat: row.key_format,
        leakPolicy: row.leak_policy,
        ipAllowList: row.ip_allow_list,
        expiringNoticeDays: row.expiring_notice_days,
        creditThresholds: row.credit_thresholds,
      }
    );
  }

  async holdsRecoverableKeys(apiId: string): Promise<boolean> {
    const [row] = await this.sql<{ holds: boolean }[]>`SELECT EXISTS (
        SELECT 1 FROM keys k JOIN encrypted_keys e ON e.key_id = k.id
        WHERE k.api_id = ${apiId} AND k.deleted_at IS NULL) AS holds`;
    return row?.holds === true;
  }

  async findLeakTargets(hash: string): Promise<LeakTarget[]> {
    const rows = await this.sql<
      {
        id: string;
        workspace_id: string;
        api_id: string;
        hash: string;
        leak_policy: LeakPolicy;
        leaked_at: number | null;
      }[]
    >`SELECT k.id, k.workspace_id, k.api_id, k.hash, a.leak_policy, k.leaked_at
      FROM keys k JOIN apis a ON a.id = k.api_id
      WHERE k.hash = ${hash} AND k.deleted_at IS NULL AND a.deleted_at IS NULL`;
    return rows.map((r) => ({
      id: r.id,
      workspaceId: r.workspace_id,
      apiId: r.api_id,
      hash: r.hash,
      leakPolicy: r.leak_policy,
      leakedAt: r.leaked_at,
    }));
  }

  async markLeaked(keyId: string, at: number, revoke: boolean, audit?: AuditRecord): Promise<boolean> {
    return this.audited(
      audit,
      async (tx) =>
        (
          await tx`UPDATE keys SET leaked_at = ${at}, updated_at = ${at},
            enabled = CASE WHEN ${revoke}::boolean THEN false ELSE enabled END
            WHERE id = ${keyId} AND leaked_at IS NULL AND deleted_at IS NULL RETURNING id`
        ).length > 0,
      (marked) => marked,
    );
  }

  async updateApi(id: string, patch: ApiPatch, audit?: AuditRecord): Promise<ApiRecord | undefined> {
    const changed = await this.audited(
      audit,
      async (tx) =>
        (
          await tx`UPDATE apis SET
            name = COALESCE(${patch.name ?? null}, name),
            key_format = COALESCE(${patch.keyFormat ?? null}, key_format),
            leak_policy = COALESCE(${patch.leakPolicy ?? null}, leak_policy),
            ip_allow_list = COALESCE(${patch.ipAllowList ?? null}::text[], ip_allow_list),
            expiring_notice_days = COALESCE(${patch.expiringNoticeDays ?? null}::int, expiring_notice_days),
            credit_thresholds = CASE WHEN ${patch.creditThresholds !== undefined}::boolean
              THEN ${patch.creditThresholds ?? null}::smallint[] ELSE credit_thresholds END
          WHERE id = ${id} AND deleted_at IS NULL RETURNING id`
        ).length > 0,
      (updated) => updated,
    );
    return changed ? this.findApi(id) : undefined;
  }

  async deleteApi(id: string, at: number, audit?: AuditRecord): Promise<boolean> {
    return this.audited(
      audit,
      async (tx) =>
        (await tx`UPDATE apis SET deleted_at = ${at} WHERE id = ${id} AND deleted_at IS NULL RETURNING id`)
          .length > 0,
      (deleted) => deleted,
    );
  }

  async createKey(key: NewKey, encrypted?: EncryptedKeyRecord, audit?: AuditRecord): Promise<void> {
    await this.audited(audit, async (tx) => {
      await insertKey(tx, key, "fail");
      if (encrypted) await insertEncrypted(tx, encrypted);
    });
  }

  async importKeys(keys: NewKey[], audit?: (inserted: NewKey[]) => AuditRecord): Promise<boolean[]> {
    return this.sql.begin(async (tx) => {
      const inserted: boolean[] = [];
      for (const key of keys) inserted.push(await insertKey(tx, key, "skip"));
      // A migration whose every hash was already there changed nothing: no record.
      if (audit && inserted.includes(true)) {
        await insertAudit(tx, KEYS_AUDIT_TABLE, audit(keys.filter((_, i) => inserted[i])));
      }
      return inserted;
    });
  }

  async listKeys(
    apiId: string,
    options: { limit: number; after: string; externalId?: string },
  ): Promise<KeyPage> {
    const rows = await this.sql<(KeyRow & { api_deleted: boolean })[]>`${this.selectKeys()}
      WHERE k.api_id = ${apiId} AND k.deleted_at IS NULL AND k.id > ${options.after}
        ${options.externalId === undefined ? this.sql`` : this.sql`AND k.external_id = ${options.externalId}`}
      ORDER BY k.id LIMIT ${options.limit + 1}`;
    const keys = rows.slice(0, options.limit).map(keyOf);
    return { keys, next: rows.length > options.limit ? (keys.at(-1)?.id ?? null) : null };
  }

  async updateKey(id: string, patch: KeyPatch, audit?: AuditRecord): Promise<VerifiableKey | undefined> {
    return this.audited(
      audit,
      async (tx) => {
        // The row lock orders this update with every credit spend, so writing the balance back loses none.
        const [row] = await tx<(KeyRow & { api_deleted: boolean })[]>`${this.selectKeys(tx)}
        WHERE k.id = ${id} FOR UPDATE OF k`;
        if (!row) return undefined;
        const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
        const k: KeyRecord = { ...keyOf(row), ...defined };
        await tx`UPDATE keys SET name = ${k.name}, meta = ${k.metaJson}::text::jsonb, external_id = ${k.externalId},
          identity_id = ${k.identityId}, expires = ${k.expires}, enabled = ${k.enabled}, remaining = ${k.remaining},
          refill_interval = ${k.refill?.interval ?? null}, refill_amount = ${k.refill?.amount ?? null},
          refill_day = ${k.refill?.day ?? null}, last_refill_at = ${k.lastRefillAt},
          permissions = ${k.permissions}::text[], roles = ${k.roles}::text[], updated_at = ${patch.updatedAt},
          ip_allow_list = ${k.ipAllowList ?? []}::text[], credit_thresholds = ${k.creditThresholds ?? null}::smallint[]
          ${patch.remaining === undefined ? tx`` : tx`, credits_given = ${k.remaining}, credits_given_at = ${patch.updatedAt}`}
        WHERE id = ${id}`;
        if (patch.ratelimits) {
          await tx`DELETE FROM key_ratelimits WHERE key_id = ${id}`;
          await insertRatelimits(tx, id, patch.ratelimits);
        }
        const [updated] = await tx<
          (KeyRow & { api_deleted: boolean })[]
        >`${this.selectKeys(tx)} WHERE k.id = ${id}`;
        return updated && { ...keyOf(updated), apiDeleted: updated.api_deleted };
      },
      (updated) => updated !== undefined,
    );
  }

  async changeKeyList(
    id: string,
    list: KeyList,
    change: { add: readonly string[]; remove: readonly string[] },
    at: number,
    audit?: AuditRecord,
  ): Promise<VerifiableKey | undefined> {
    const column = this.sql(list);
    // One UPDATE: the row lock serialises concurrent changes, each applied to the list as the previous left it.
    const changed = await this.audited(
      audit,
      async (tx) =>
        (
          await tx<{ id: string }[]>`UPDATE keys SET ${column} = ARRAY(
        SELECT v FROM unnest(${column} || ${change.add as string[]}::text[]) WITH ORDINALITY AS t (v, n)
        WHERE v <> ALL (${change.remove as string[]}::text[])
        GROUP BY v ORDER BY min(n)),
        updated_at = ${at}
      WHERE id = ${id} RETURNING id`
        )[0],
      (changed) => changed !== undefined,
    );
    return changed && this.findKeyById(id);
  }

  async removeDeletedGrant(deleted: DeletedGrant, at: number): Promise<string[] | undefined> {
    const column = this.sql(deleted.list);
    // One statement: the id's primary key makes a second instance wait for the first and then change nothing.
    const [row] = await this.sql<{ applied: boolean; hashes: string[] }[]>`WITH applied AS (
        INSERT INTO keys_deleted_grants (id, workspace_id, list, name, applied_at)
        VALUES (${deleted.id}, ${deleted.workspaceId}, ${deleted.list}, ${deleted.name}, ${at})
        ON CONFLICT (id) DO NOTHING RETURNING id
      ), removed AS (
        UPDATE keys SET ${column} = array_remove(${column}, ${deleted.name}::text)
        WHERE workspace_id = ${deleted.workspaceId} AND ${deleted.name}::text = ANY (${column})
          AND EXISTS (SELECT 1 FROM applied)
        RETURNING hash
      )
      SELECT EXISTS (SELECT 1 FROM applied) AS applied, ARRAY(SELECT hash FROM removed) AS hashes`;
    return row?.applied ? row.hashes : undefined;
  }

  async updateCredits(
    id: string,
    operation: CreditsOperation,
    value: number | null,
    at: number,
    audit?: AuditRecord,
  ): Promise<CreditsState | "unlimited" | undefined> {
    return this.audited(
      audit,
      (tx) => this.changeCredits(tx, id, operation, value, at),
      (state) => state !== undefined && state !== "unlimited",
    );
  }

  private async changeCredits(
    sql: TransactionSql,
    id: string,
    operation: CreditsOperation,
    value: number | null,
    at: number,
  ): Promise<CreditsState | "unlimited" | undefined> {
    // Every change first settles a refill due at `at`, so a later refill run cannot overwrite it.
    const { balance, lastRefill } = this.refillTerms(at);
    let rows: CreditsRow[];
    switch (operation) {
      case "set": {
        const v = value === null ? null : String(value);
        rows = await sql<CreditsRow[]>`UPDATE keys SET remaining = ${v}::bigint,
            refill_interval = CASE WHEN ${v}::bigint IS NULL THEN NULL ELSE refill_interval END,
            refill_amount = CASE WHEN ${v}::bigint IS NULL THEN NULL ELSE refill_amount END,
            refill_day = CASE WHEN ${v}::bigint IS NULL THEN NULL ELSE refill_day END,
            last_refill_at = ${lastRefill}, updated_at = ${at}, credits_given = ${v}::bigint, credits_given_at = ${at}
          WHERE id = ${id} RETURNING remaining, refill_interval, refill_amount, refill_day`;
        break;
      }
      case "increment":
      case "decrement": {
        const delta = operation === "increment" ? (value ?? 0) : -(value ?? 0);
        rows = await sql<CreditsRow[]>`UPDATE keys SET remaining = GREATEST(${balance} + ${delta}, 0),
            last_refill_at = ${lastRefill}, updated_at = ${at}
          WHERE id = ${id} AND remaining IS NOT NULL RETURNING remaining, refill_interval, refill_amount, refill_day`;
        if (rows.length === 0) {
          const [exists] = await sql`SELECT 1 FROM keys WHERE id = ${id}`;
          return exists ? "unlimited" : undefined;
        }
        break;
      }
      default: {
        const never: never = operation;
        throw new Error(`unknown operation ${never}`);
      }
    }
    const [row] = rows;
    return row && { remaining: row.remaining, refill: refillOf(row) };
  }

  async deleteKey(id: string, permanent: boolean, at: number, audit?: AuditRecord): Promise<boolean> {
    return this.audited(
      audit,
      async (tx) => {
        if (permanent) {
          await tx`DELETE FROM key_last_used WHERE key_id = ${id}`;
          return (await tx`DELETE FROM keys WHERE id = ${id} RETURNING id`).length > 0;
        }
        return (
          (await tx`UPDATE keys SET deleted_at = ${at} WHERE id = ${id} AND deleted_at IS NULL RETURNING id`)
            .length > 0
        );
      },
      // A concurrent deletion that got there first changed the row: this one changed nothing.
      (deleted) => deleted,
    );
  }

  async rerollKey(
    key: NewKey,
    encrypted: EncryptedKeyRecord | undefined,
    originalId: string,
    originalExpires: number,
    audit?: AuditRecord,
  ): Promise<void> {
    await this.audited(audit, async (tx) => {
      // Locked, so no spend slips between reading the balance and handing it over.
      const [original] = await tx<
        {
          remaining: number | null;
          last_refill_at: number | null;
          credits_given: number | null;
          credits_given_at: number | null;
        }[]
      >`SELECT remaining, last_refill_at, credits_given, credits_given_at FROM keys WHERE id = ${originalId} FOR UPDATE`;
      if (!original) throw new Error(`no key ${originalId}`);
      await insertKey(
        tx,
        { ...key, remaining: original.remaining, lastRefillAt: original.last_refill_at },
        "fail",
        { amount: original.credits_given, at: original.credits_given_at },
      );
      if (encrypted) await insertEncrypted(tx, encrypted);
      await tx`UPDATE keys SET expires = ${originalExpires}, updated_at = ${key.createdAt} WHERE id = ${originalId}`;
    });
  }

  async findEncryptedKey(keyId: string): Promise<EncryptedKeyRecord | undefined> {
    const [row] = await this.sql<
      { key_id: string; workspace_id: string; ciphertext: string; iv: string; tag: string; kek_id: string }[]
    >`SELECT key_id, workspace_id, ciphertext, iv, tag, kek_id FROM encrypted_keys WHERE key_id = ${keyId}`;
    return (
      row && {
        keyId: row.key_id,
        workspaceId: row.workspace_id,
        ciphertext: row.ciphertext,
        iv: row.iv,
        tag: row.tag,
        kekId: row.kek_id,
      }
    );
  }

  async findKeyById(id: string): Promise<VerifiableKey | undefined> {
    const [row] = await this.sql<
      (KeyRow & { api_deleted: boolean })[]
    >`${this.selectKeys()} WHERE k.id = ${id}`;
    return row && { ...keyOf(row), apiDeleted: row.api_deleted };
  }

  async findKeyByHash(workspaceId: string, hash: string): Promise<VerifiableKey | undefined> {
    const [row] = await this.sql<
      (KeyRow & { api_deleted: boolean })[]
    >`${this.selectKeys()} WHERE k.workspace_id = ${workspaceId} AND k.hash = ${hash}`;
    return row && { ...keyOf(row), apiDeleted: row.api_deleted };
  }

  async findKeysByHash(lookups: readonly KeyLookup[]): Promise<CachedKey[]> {
    if (lookups.length === 0) return [];
    // One lookup as scalars, several as arrays behind sub-selects: handed the arrays themselves,
    // PostgreSQL planned the look-up anew on every call (see spendCreditsGroups), which cost more
    // than the look-up itself. Each lookup goes through
    // the (workspace_id, hash) index, whatever the workspaces of a batch.
    const only = lookups.length === 1 ? lookups[0]! : undefined;
    const wanted = only
      ? this.sql`SELECT ${only.workspaceId}::text AS workspace_id, ${only.hash}::text AS hash`
      : this.sql`SELECT DISTINCT * FROM unnest((SELECT ${lookups.map((l) => l.workspaceId)}::text[]),
          (SELECT ${lookups.map((l) => l.hash)}::text[])) AS w(workspace_id, hash)`;
    const rows = await this.sql<CachedKeyRow[]>`WITH wanted AS (${wanted})
      SELECT k.id, k.workspace_id, k.api_id, k.hash, k.name,
        k.meta::text AS meta_json, k.external_id, k.identity_id, k.permissions, k.roles, k.expires, k.enabled,
        k.remaining, k.deleted_at, (a.deleted_at IS NOT NULL) AS api_deleted,
        k.ip_allow_list, a.ip_allow_list AS api_ip_allow_list,
        COALESCE(k.credit_thresholds, a.credit_thresholds) AS thresholds_in_effect,
        COALESCE((SELECT json_agg(json_build_object('id', r.id, 'name', r.name, 'limit', r."limit",
            'duration', r.duration, 'autoApply', r.auto_apply) ORDER BY r.name)
          FROM key_ratelimits r WHERE r.key_id = k.id), '[]'::json) AS ratelimits
      FROM wanted w CROSS JOIN LATERAL (
        SELECT * FROM keys k WHERE k.workspace_id = w.workspace_id AND k.hash = w.hash
      ) k JOIN apis a ON a.id = k.api_id`;
    return rows.map(
      (row): CachedKey => ({
        id: row.id,
        workspaceId: row.workspace_id,
        apiId: row.api_id,
        hash: row.hash,
        name: row.name,
        metaJson: row.meta_json,
        externalId: row.external_id,
        identityId: row.identity_id,
        permissions: row.permissions,
        roles: row.roles,
        expires: row.expires,
        enabled: row.enabled,
        remaining: row.remaining,
        deletedAt: row.deleted_at,
        ratelimits: row.ratelimits,
        apiDeleted: row.api_deleted,
        allowList: AllowList.of(row.api_ip_allow_list, row.ip_allow_list),
        creditThresholds: row.thresholds_in_effect,
      }),
    );
  }

  /**
   * The common case is one statement: settle a due refill and spend, or
   * nothing. The row lock serialises concurrent spenders on any number of
   * processes, so the balance never goes below 0.
   */
  async spendCredits(keyId: string, cost: number, at: number): Promise<Spend | undefined> {
    const { due, balance, lastRefill } = this.refillTerms(at);
    if (cost > 0) {
      const [spent] = await this.sql<{ remaining: number }[]>`UPDATE keys
        SET remaining = ${balance} - ${cost}, last_refill_at = ${lastRefill}
        WHERE id = ${keyId} AND deleted_at IS NULL AND ${balance} >= ${cost} RETURNING remaining`;
      if (spent) return { spent: true, remaining: spent.remaining };
    }
    // Not spent: a due refill is still applied (it was smaller than the cost), then the balance answered.
    const [refilled] = await this.sql<{ remaining: number }[]>`UPDATE keys
      SET remaining = refill_amount, last_refill_at = ${lastRefill}
      WHERE id = ${keyId} AND deleted_at IS NULL AND ${due} RETURNING remaining`;
    if (refilled) return { spent: cost === 0, remaining: refilled.remaining };
    // A new statement, so the balance read is the latest committed one.
    const [row] = await this.sql<
      { remaining: number | null }[]
    >`SELECT remaining FROM keys WHERE id = ${keyId} AND deleted_at IS NULL`;
    if (!row) return undefined;
    if (row.remaining === null) return { spent: true, remaining: null };
    return { spent: cost === 0, remaining: row.remaining };
  }

  /** SQL terms over a keys row: is a refill due at `at`, the balance after it, and the refill instant to store. */
  private refillTerms(at: number) {
    const sql = this.sql;
    // Keys without a schedule, the most common, never reach the date arithmetic.
    const due = sql`(CASE WHEN refill_interval IS NULL THEN false
      ELSE keys_latest_refill(refill_interval, refill_day, ${at}) > COALESCE(last_refill_at, created_at) END)`;
    return {
      due,
      balance: sql`(CASE WHEN ${due} THEN refill_amount ELSE remaining END)`,
      lastRefill: sql`(CASE WHEN ${due} THEN keys_latest_refill(refill_interval, refill_day, ${at}) ELSE last_refill_at END)`,
    };
  }

  /**
   * One statement for every group: lock the keys in id order (so concurrent
   * batches cannot deadlock), settle a due refill, grant each group
   * min(count, floor(balance / cost)) and write the balance back. The lock
   * makes it exact against every other spender on any instance. Rows whose
   * balance does not move are not written.
   *
   * Shaped so that PostgreSQL plans it once: a single key (the common case of
   * a hot key) comes as scalar parameters, several as arrays behind
   * sub-selects, each key locked through its own index look-up, in id order.
   * Handed the arrays themselves, PostgreSQL planned the statement anew on
   * every call: a plan for the arrays' length looked cheaper than its generic
   * plan, which joined the whole table (and was no better on a table of a few
   * thousand keys). Planned once, the statement costs PostgreSQL a fraction of
   * the CPU (docs/architecture.md).
   */
  async spendCreditsGroups(groups: SpendGroup[], at: number): Promise<(GroupSpend | undefined)[]> {
    if (groups.length === 0) return [];
    const only = groups.length === 1 ? groups[0]! : undefined;
    const wanted = only
      ? this.sql`SELECT ${only.keyId}::text AS id, ${only.count}::bigint AS n, ${only.cost}::bigint AS cost`
      : this.sql`SELECT * FROM unnest((SELECT ${groups.map((g) => g.keyId)}::text[]),
          (SELECT ${groups.map((g) => String(g.count))}::bigint[]), (SELECT ${groups.map((g) => String(g.cost))}::bigint[]))
          AS w(id, n, cost) ORDER BY id`;
    const rows = await this.sql<
      { id: string; before: number | null; granted: number; baseline: number | null; period: number }[]
    >`
      WITH wanted AS (${wanted}), locked AS (
        SELECT l.*, w.n, w.cost FROM wanted w CROSS JOIN LATERAL (
          SELECT k.id, k.remaining, k.refill_amount, k.last_refill_at, k.refill_interval, k.created_at,
            k.credits_given, k.credits_given_at,
            keys_latest_refill(k.refill_interval, k.refill_day, ${at}) AS refill_at,
            COALESCE(keys_latest_refill(k.refill_interval, k.refill_day, ${at})
              > COALESCE(k.last_refill_at, k.created_at), false) AS due
          FROM keys k WHERE k.id = w.id AND k.deleted_at IS NULL
          FOR UPDATE
        ) l
      ), balances AS (
        SELECT id, n, cost, due,
          CASE WHEN due THEN refill_amount ELSE remaining END AS before,
          CASE WHEN due THEN refill_at ELSE last_refill_at END AS last_refill,
          CASE WHEN refill_interval IS NULL THEN credits_given ELSE refill_amount END AS baseline,
          CASE WHEN refill_interval IS NULL THEN COALESCE(credits_given_at, created_at)
            ELSE COALESCE(CASE WHEN due THEN refill_at ELSE last_refill_at END, created_at) END AS period
        FROM locked
      ), granted AS (
        SELECT id, before, last_refill, cost, due, baseline, period,
          CASE WHEN before IS NULL OR cost = 0 THEN n ELSE LEAST(n, before / cost) END AS granted
        FROM balances
      ), spent AS (
        UPDATE keys k SET remaining = g.before - g.granted * g.cost, last_refill_at = g.last_refill
        FROM granted g
        WHERE k.id = g.id AND g.before IS NOT NULL AND (g.due OR g.granted * g.cost > 0)
        RETURNING k.id
      )
      SELECT id, before, granted, baseline, period FROM granted`;
    const byId = new Map(rows.map((r) => [r.id, r]));
    return groups.map((g) => {
      const row = byId.get(g.keyId);
      return (
        row && {
          granted: Number(row.granted),
          before: row.before,
          baseline: row.baseline,
          period: row.period,
        }
      );
    });
  }

  async recordLastUsed(uses: readonly KeyUse[]): Promise<void> {
    if (uses.length === 0) return;
    // Rows in key order, so two instances writing the same keys cannot deadlock; one row per key (an
    // upsert may not touch a row twice); a time only moves forward; keys that no longer exist are left out.
    await this.sql`INSERT INTO key_last_used AS l (key_id, at)
      SELECT DISTINCT ON (u.id) u.id, u.at
      FROM unnest(${uses.map((u) => u.keyId)}::text[], ${uses.map((u) => String(u.at))}::bigint[]) AS u(id, at)
        JOIN keys k ON k.id = u.id
      ORDER BY u.id, u.at DESC
      ON CONFLICT (key_id) DO UPDATE SET at = EXCLUDED.at WHERE l.at < EXCLUDED.at`;
  }

  async applyDueRefills(at: number, limit?: number): Promise<number> {
    // Locked in id order like batch spends; a key a verification refilled meanwhile no longer qualifies.
    const rows = await this.sql`WITH due AS (
        SELECT id, keys_latest_refill(refill_interval, refill_day, ${at}) AS refill_at FROM keys
        WHERE refill_interval IS NOT NULL AND deleted_at IS NULL
          AND keys_latest_refill(refill_interval, refill_day, ${at}) > COALESCE(last_refill_at, created_at)
        ORDER BY id
        ${limit === undefined ? this.sql`` : this.sql`LIMIT ${limit}`}
        FOR UPDATE
      )
      UPDATE keys k SET remaining = k.refill_amount, last_refill_at = due.refill_at
      FROM due WHERE k.id = due.id RETURNING k.id`;
    return rows.length;
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

  private selectKeys(sql: Sql | TransactionSql = this.sql) {
    return sql`SELECT k.id, k.workspace_id, k.api_id, k.hash, k.start, k.name, k.meta::text AS meta_json,
        k.external_id, k.identity_id, k.permissions, k.roles, k.expires, k.enabled, k.remaining,
        k.refill_interval, k.refill_amount, k.refill_day, k.last_refill_at, k.created_at, k.updated_at, l.at AS last_used_at, k.deleted_at,
        k.byte_length, EXISTS (SELECT 1 FROM encrypted_keys e WHERE e.key_id = k.id) AS recoverable,
        k.ip_allow_list, k.leaked_at, k.credit_thresholds,
        (a.deleted_at IS NOT NULL) AS api_deleted,
        COALESCE((SELECT json_agg(json_build_object('id', r.id, 'name', r.name, 'limit', r."limit",
            'duration', r.duration, 'autoApply', r.auto_apply) ORDER BY r.name)
          FROM key_ratelimits r WHERE r.key_id = k.id), '[]'::json) AS ratelimits
      FROM keys k JOIN apis a ON a.id = k.api_id LEFT JOIN key_last_used l ON l.key_id = k.id`;
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
    refill: refillOf(row),
    lastRefillAt: row.last_refill_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lastUsedAt: row.last_used_at,
    deletedAt: row.deleted_at,
    ratelimits: row.ratelimits,
    byteLength: row.byte_length,
    recoverable: row.recoverable,
    ipAllowList: row.ip_allow_list,
    leakedAt: row.leaked_at,
    creditThresholds: row.credit_thresholds,
  };
}

function refillOf(row: CreditsRow) {
  return row.refill_interval === null
    ? null
    : { interval: row.refill_interval, amount: row.refill_amount ?? 0, day: row.refill_day };
}

/** Inserts a key and its rate limits; on a hash its workspace holds already, "skip" answers false and "fail" throws. */
async function insertKey(
  tx: TransactionSql,
  key: NewKey,
  onDuplicate: "fail" | "skip",
  // The balance it was given and when (credit-events.ts): its own at creation, the original's on a reroll.
  given: { amount: number | null; at: number | null } = { amount: key.remaining, at: key.createdAt },
): Promise<boolean> {
  const rows =
    await tx`INSERT INTO keys (id, workspace_id, api_id, hash, start, name, meta, external_id, identity_id,
      permissions, roles, expires, enabled, remaining, refill_interval, refill_amount, refill_day, last_refill_at,
      byte_length, created_at, credits_given, credits_given_at, ip_allow_list, credit_thresholds)
    VALUES (${key.id}, ${key.workspaceId}, ${key.apiId}, ${key.hash}, ${key.start}, ${key.name},
      ${key.metaJson}::text::jsonb, ${key.externalId}, ${key.identityId}, ${key.permissions}::text[], ${key.roles}::text[],
      ${key.expires}, ${key.enabled}, ${key.remaining}, ${key.refill?.interval ?? null},
      ${key.refill?.amount ?? null}, ${key.refill?.day ?? null}, ${key.lastRefillAt ?? null}, ${key.byteLength},
      ${key.createdAt}, ${given.amount}, ${given.at}, ${key.ipAllowList ?? []}::text[],
      ${key.creditThresholds ?? null}::smallint[])
    ${onDuplicate === "skip" ? tx`ON CONFLICT (workspace_id, hash) DO NOTHING` : tx``} RETURNING id`;
  if (rows.length === 0) return false;
  await insertRatelimits(tx, key.id, key.ratelimits);
  return true;
}

async function insertRatelimits(tx: TransactionSql, keyId: string, ratelimits: KeyRatelimitRecord[]) {
  for (const r of ratelimits) {
    await tx`INSERT INTO key_ratelimits (id, key_id, name, "limit", duration, auto_apply)
      VALUES (${r.id}, ${keyId}, ${r.name}, ${r.limit}, ${r.duration}, ${r.autoApply})`;
  }
}

async function insertEncrypted(tx: TransactionSql, e: EncryptedKeyRecord) {
  await tx`INSERT INTO encrypted_keys (key_id, workspace_id, ciphertext, iv, tag, kek_id)
    VALUES (${e.keyId}, ${e.workspaceId}, ${e.ciphertext}, ${e.iv}, ${e.tag}, ${e.kekId})`;
}
