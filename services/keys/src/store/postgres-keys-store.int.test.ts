import { migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing";
import { afterAll, beforeAll } from "vitest";
import { createWorkspace } from "../admin.ts";
import { keysMigrations } from "../migrations.ts";
import { keysStoreContract } from "./keys-store.contract.ts";
import { PostgresKeysStore } from "./postgres-keys-store.ts";

let db: TestDatabase;
let other: string;

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
