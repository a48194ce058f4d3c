import { connect, migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keysStoreContract } from "../../testing/keys-store.suite.ts";
import { createWorkspace } from "../admin.ts";
import { keysMigrations } from "../migrations.ts";
import { PostgresKeysStore } from "./postgres-keys-store.ts";

let db: TestDatabase;
let other: string;
const NOW = Date.UTC(2026, 10, 25);

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
  other = (await createWorkspace(db.sql, "other")).workspaceId;
});
afterAll(async () => {
  await db?.drop();
});

keysStoreContract("postgres", async () => ({
  store: new PostgresKeysStore(db.sql),
  workspaces: ["ws_default", other],
  addRootKey: async (r) => {
    await db.sql`INSERT INTO root_keys (id, workspace_id, hash, start, permissions, created_at, revoked_at)
      VALUES (${r.id}, ${r.workspaceId}, ${r.hash}, ${"lk_root_"}, ${r.permissions}::text[], ${1}, ${r.revokedAt})`;
  },
  deleteApi: async (id) => {
    await db.sql`UPDATE apis SET deleted_at = 1 WHERE id = ${id}`;
  },
}));

describe("lastUsedAt in key_last_used (migration 6)", () => {
  it("carries the times written before the migration over, and keeps none for a permanently deleted key", async () => {
    const old = await createTestDatabase();
    try {
      await migrate(old.sql, "keys", keysMigrations.slice(0, 5));
      await old.sql`INSERT INTO apis (id, workspace_id, name, created_at) VALUES ('api_m', 'ws_default', 'm', 1)`;
      await old.sql`INSERT INTO keys (id, workspace_id, api_id, hash, start, created_at, last_used_at)
        VALUES ('key_used', 'ws_default', 'api_m', 'hash_used', 'lk_', 1, 7000),
               ('key_unused', 'ws_default', 'api_m', 'hash_unused', 'lk_', 1, NULL)`;
      await migrate(old.sql, "keys", keysMigrations);
      const store = new PostgresKeysStore(old.sql);
      expect((await store.findKeyById("key_used"))?.lastUsedAt).toBe(7_000);
      expect((await store.findKeyById("key_unused"))?.lastUsedAt).toBeNull();

      await store.recordLastUsed([
        { keyId: "key_unused", at: 9_000 },
        { keyId: "key_used", at: 6_000 },
      ]);
      expect((await store.findKeyByHash("ws_default", "hash_unused"))?.lastUsedAt).toBe(9_000);
      expect((await store.findKeyByHash("ws_default", "hash_used"))?.lastUsedAt).toBe(7_000);

      await store.deleteKey("key_used", true, 10_000);
      await store.deleteKey("key_unused", false, 10_000);
      expect(await old.sql`SELECT key_id, at FROM key_last_used ORDER BY key_id`).toEqual([
        { key_id: "key_unused", at: 9_000 },
      ]);
    } finally {
      await old.drop();
    }
  });
});

describe("credit spend and look-up statements", () => {
  it("keep one plan on a table of 5,000 keys: a credit spend or a look-up by hash, of one key or of several", async () => {
    await db.sql`INSERT INTO apis (id, workspace_id, name, created_at) VALUES ('api_plans', 'ws_default', 'p', 1)`;
    await db.sql`INSERT INTO keys (id, workspace_id, api_id, hash, start, created_at, remaining)
      SELECT 'key_plans_' || i, 'ws_default', 'api_plans', 'hash_plans_' || i, 'lk_', 1, 1000
      FROM generate_series(1, 5000) AS i`;
    await db.sql`ANALYZE keys`;
    // One connection, so every statement is prepared, and its plans counted, on it.
    const spendSql = connect(db.url, { max: 1 });
    try {
      const store = new PostgresKeysStore(spendSql);
      for (let i = 0; i < 20; i++) {
        expect(await store.spendCreditsGroups([{ keyId: "key_plans_1", cost: 2, count: 3 }], NOW)).toEqual([
          // Inserted without credits_given: no baseline; the period starts at creation.
          { granted: 3, before: 1000 - 6 * i, baseline: null, period: 1 },
        ]);
        expect(
          await store.spendCreditsGroups(
            [
              { keyId: "key_plans_2", cost: 1, count: 1 },
              { keyId: "key_plans_3", cost: 1, count: 2 },
            ],
            NOW,
          ),
        ).toEqual([
          { granted: 1, before: 1000 - i, baseline: null, period: 1 },
          { granted: 2, before: 1000 - 2 * i, baseline: null, period: 1 },
        ]);
        const inDefault = (hash: string) => ({ workspaceId: "ws_default", hash });
        expect((await store.findKeysByHash([inDefault(`hash_plans_${i + 1}`)])).map((k) => k.id)).toEqual([
          `key_plans_${i + 1}`,
        ]);
        const found = await store.findKeysByHash([
          inDefault(`hash_plans_${i + 1}`),
          inDefault("hash_unknown"),
          inDefault(`hash_plans_${i + 2}`),
        ]);
        expect(new Set(found.map((k) => k.id))).toEqual(
          new Set([`key_plans_${i + 1}`, `key_plans_${i + 2}`]),
        );
      }
      const plans = await spendSql<{ statement: string; generic: number; custom: number }[]>`
        SELECT (CASE WHEN statement LIKE '%CROSS JOIN LATERAL%k.hash = w.hash%'
              THEN (CASE WHEN statement LIKE '%unnest%' THEN 'look-up, several keys' ELSE 'look-up, one key' END)
            WHEN statement LIKE '%WITH wanted AS%unnest%' THEN 'spend, several keys'
            ELSE 'spend, one key' END) AS statement,
          generic_plans::int AS generic, custom_plans::int AS custom
        FROM pg_prepared_statements
        WHERE statement LIKE '%WITH wanted AS%' AND statement NOT LIKE '%pg_prepared_statements%'
        ORDER BY statement`;
      // PostgreSQL tries five custom plans before it settles on a generic one.
      expect(plans).toEqual([
        { statement: "look-up, one key", generic: 15, custom: 5 },
        { statement: "look-up, several keys", generic: 15, custom: 5 },
        { statement: "spend, one key", generic: 15, custom: 5 },
        { statement: "spend, several keys", generic: 15, custom: 5 },
      ]);
    } finally {
      await spendSql.end({ timeout: 5 });
    }
  });

  it("never deadlocks or overdraws when two connections spend the same keys named in opposite orders", async () => {
    await db.sql`INSERT INTO apis (id, workspace_id, name, created_at) VALUES ('api_order', 'ws_default', 'o', 1)`;
    await db.sql`INSERT INTO keys (id, workspace_id, api_id, hash, start, created_at, remaining)
      SELECT 'key_order_' || i, 'ws_default', 'api_order', 'hash_order_' || i, 'lk_', 1, 300
      FROM generate_series(1, 3) AS i`;
    const ids = ["key_order_1", "key_order_2", "key_order_3"];
    const one = connect(db.url, { max: 1 });
    const other = connect(db.url, { max: 1 });
    try {
      const spend = (sql: typeof one, order: string[]) =>
        new PostgresKeysStore(sql).spendCreditsGroups(
          order.map((keyId) => ({ keyId, cost: 1, count: 2 })),
          NOW,
        );
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          i % 2 === 0 ? spend(one, ids) : spend(other, [...ids].reverse()),
        ),
      );
      // 100 statements of 2 credits per key: 200 of each key's 300, every statement granted in full.
      expect(answers.flat().map((a) => a?.granted)).toEqual(new Array(300).fill(2));
      const rows = await db.sql`SELECT id, remaining FROM keys WHERE id = ANY(${ids}) ORDER BY id`;
      expect(rows).toEqual(ids.map((id) => ({ id, remaining: 100 })));
    } finally {
      await one.end({ timeout: 5 });
      await other.end({ timeout: 5 });
    }
  });
});
