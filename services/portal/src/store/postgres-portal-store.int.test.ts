import { migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, expect, it } from "vitest";
import { portalStoreContract } from "../../testing/portal-store.suite.ts";
import { portalMigrations } from "../migrations.ts";
import { PostgresPortalStore } from "./postgres-portal-store.ts";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "portal", portalMigrations);
});

afterAll(async () => {
  await db.drop();
});

portalStoreContract("postgres", () => new PostgresPortalStore(db.sql));

it("keeps only the hashes of codes and tokens, each unique", async () => {
  const rows = await db.sql<{ indexdef: string }[]>`
    SELECT indexdef FROM pg_indexes WHERE tablename = 'portal_sessions' AND indexdef LIKE '%UNIQUE%' ORDER BY indexname`;
  expect(rows.map((r) => r.indexdef.replace(/.* USING btree /, ""))).toEqual([
    "(code_hash)",
    "(id)",
    "(token_hash)",
  ]);
});
