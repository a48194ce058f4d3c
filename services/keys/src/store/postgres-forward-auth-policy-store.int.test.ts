import { migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll } from "vitest";
import { policyStoreContract } from "../../testing/forward-auth-policy-store.suite.ts";
import { createWorkspace } from "../admin.ts";
import { keysMigrations } from "../migrations.ts";
import { PostgresPolicyStore } from "./postgres-forward-auth-policy-store.ts";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
});
afterAll(async () => {
  await db?.drop();
});

policyStoreContract("postgres", async () => {
  const one = await createWorkspace(db.sql, `one-${Math.random()}`);
  const two = await createWorkspace(db.sql, `two-${Math.random()}`);
  return { store: new PostgresPolicyStore(db.sql), workspaces: [one.workspaceId, two.workspaceId] };
});
