import { migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll } from "vitest";
import { ratelimitStoreContract } from "../../testing/ratelimit-store.suite.ts";
import { ratelimitMigrations } from "../migrations.ts";
import { PostgresRatelimitStore } from "./postgres-ratelimit-store.ts";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "ratelimit", ratelimitMigrations);
});

afterAll(async () => {
  await db.drop();
});

// Each test makes its own namespaces, so one database serves them all.
ratelimitStoreContract("postgres", () => new PostgresRatelimitStore(db.sql));
