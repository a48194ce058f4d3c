import { migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
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

it("has an index for a webhook's deliveries of one status in page order (migration 3)", async () => {
  const rows = await db.sql<{ indexdef: string }[]>`
    SELECT indexdef FROM pg_indexes WHERE indexname = 'webhook_deliveries_status_page'`;
  expect(rows.map((r) => r.indexdef)).toEqual([
    'CREATE INDEX webhook_deliveries_status_page ON public.webhook_deliveries USING btree (webhook_id, status, created_at DESC, id COLLATE "C" DESC)',
  ]);
});
