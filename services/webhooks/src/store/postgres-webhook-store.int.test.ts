import { migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing";
import { afterAll, beforeAll } from "vitest";
import { webhookMigrations } from "../migrations.ts";
import { PostgresWebhookStore } from "./postgres-webhook-store.ts";
import { webhookStoreContract } from "./webhook-store.contract.ts";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "webhooks", webhookMigrations);
});

afterAll(async () => {
  await db.drop();
});

// Each test works in its own workspaces, so one database serves them all.
webhookStoreContract("postgres", () => new PostgresWebhookStore(db.sql));
