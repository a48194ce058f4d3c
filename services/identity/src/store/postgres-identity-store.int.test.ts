import { migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll } from "vitest";
import { identityStoreContract } from "../../testing/identity-store.suite.ts";
import { identityMigrations } from "../migrations.ts";
import { PostgresIdentityStore } from "./postgres-identity-store.ts";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "identity", identityMigrations);
});

afterAll(async () => {
  await db.drop();
});

// Each test works in its own workspaces, so one database serves them all.
identityStoreContract("postgres", () => new PostgresIdentityStore(db.sql));
