import { migrate } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, expect, it } from "vitest";
import { webhookStoreContract } from "../../testing/webhook-store.suite.ts";
import { webhookMigrations } from "../migrations.ts";
import { fairClaimStatement, PostgresWebhookStore } from "./postgres-webhook-store.ts";

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

it("claims fairly from 100,000 pending deliveries in 50 workspaces through indexes only (migration 4)", async () => {
  const big = await createTestDatabase();
  try {
    await migrate(big.sql, "webhooks", webhookMigrations);
    await big.sql`
      INSERT INTO webhooks (id, workspace_id, url, events, description, enabled, sealed_secret, created_at, updated_at)
      SELECT 'wh_' || w || '_' || h, 'ws_' || w, 'https://example.com', ARRAY['key.created'], '', true, 's', 0, 0
      FROM generate_series(1, 50) w, generate_series(1, 20) h`;
    // 100 per webhook, every other one due; the rest wait for a retry.
    await big.sql`
      INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, event_type, occurred_at, data_json,
                                      status, next_attempt_at, created_at)
      SELECT 'dlv_' || w || '_' || h || '_' || i, 'wh_' || w || '_' || h, 'ws_' || w, 'evt_' || i, 'key.created',
             0, '{}', 'pending', CASE WHEN i % 2 = 0 THEN 1000000 - i ELSE 9000000 + i END, 0
      FROM generate_series(1, 50) w, generate_series(1, 20) h, generate_series(1, 100) i`;
    await big.sql`ANALYZE webhook_deliveries`;
    await big.sql`ANALYZE webhooks`;
    const store = new PostgresWebhookStore(big.sql);
    const caps = { perWorkspace: 5, perWebhook: 2 };
    // Ten slots: one delivery from each of ten workspaces, none of them with anything in flight.
    const first = await store.claimDue(1_000_000, 10, 60_000, caps);
    expect(new Set(first.map((c) => c.workspaceId)).size).toBe(10);
    const [row] =
      await big.sql`EXPLAIN (FORMAT JSON) ${fairClaimStatement(big.sql, 1_000_000, 10, 1_060_000, caps)}`;
    const scans: string[] = [];
    const walk = (node: Record<string, unknown>) => {
      if (node["Relation Name"] === "webhook_deliveries") {
        scans.push(`${node["Node Type"]}${node["Index Name"] ? ` ${node["Index Name"]}` : ""}`);
      }
      for (const child of (node["Plans"] as Record<string, unknown>[] | undefined) ?? []) walk(child);
    };
    walk((row!["QUERY PLAN"] as { Plan: Record<string, unknown> }[])[0]!.Plan);
    // No scan of the table (the update itself aside): each read probes migration 4's indexes or the key.
    expect(scans.filter((s) => s !== "ModifyTable" && !s.includes("Index"))).toEqual([]);
    expect(new Set(scans.filter((s) => s !== "ModifyTable").map((s) => s.split(" ").pop()))).toEqual(
      new Set([
        "webhook_deliveries_leased",
        "webhook_deliveries_pending_webhook",
        "webhook_deliveries_pending_workspace",
        "webhook_deliveries_pkey",
      ]),
    );
  } finally {
    await big.drop();
  }
}, 60_000);

it("puts the errors kept before migration 5 in the owner's words, in attempts and in disabled webhooks' reasons", async () => {
  const old = await createTestDatabase();
  try {
    await migrate(old.sql, "webhooks", webhookMigrations.slice(0, 4));
    const reason = (last: string) =>
      `Disabled automatically at 2026-11-26T09:00:00.000Z after 15 consecutive failed attempts; the last: ${last}. Fix the receiver, then enable it with webhooks.update.`;
    const kept: [string, string, string][] = [
      ["answered 500", "status 500", "status 500"],
      [
        "answered 307: redirects are not followed",
        "status 307: the answer was a redirect, which is not followed",
        "status 307",
      ],
      ["timed out after 10000 ms", "timed out after 10000 ms", "timed out after 10000 ms"],
      [
        "refused: localhost resolves to 127.0.0.1 is a loopback address; nothing was sent",
        "address not allowed or not found: the host did not resolve to a public address; nothing was sent",
        "refused: localhost resolves to 127.0.0.1 is a loopback address; nothing was sent",
      ],
      [
        "getaddrinfo ENOTFOUND redis.internal",
        "address not allowed or not found: the host did not resolve to a public address; nothing was sent",
        "getaddrinfo ENOTFOUND redis.internal",
      ],
      [
        "refused: 10.0.0.5 is a private address; nothing was sent",
        "address not allowed: deliveries go to public addresses only; nothing was sent",
        "refused: 10.0.0.5 is a private address; nothing was sent",
      ],
      ["connect ECONNREFUSED 203.0.113.9:443", "could not connect", "connect ECONNREFUSED 203.0.113.9:443"],
      ["read ECONNRESET", "the connection closed before an answer", "read ECONNRESET"],
      [
        "the attempt could not be signed: the secret does not open with the configured encryption key",
        "the attempt could not be signed",
        "the attempt could not be signed: the secret does not open with the configured encryption key",
      ],
    ];
    for (const [i, [before, , last]] of kept.entries()) {
      await old.sql`
        INSERT INTO webhooks (id, workspace_id, url, events, description, enabled, disabled_reason, sealed_secret,
                              created_at, updated_at)
        VALUES (${`wh_${i}`}, 'ws_1', 'https://example.com', ARRAY['key.created'], '', false, ${reason(last)}, 's', 0, 0)`;
      await old.sql`
        INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, event_type, occurred_at, data_json,
                                        status, created_at)
        VALUES (${`dlv_${i}`}, ${`wh_${i}`}, 'ws_1', 'evt_1', 'key.created', 0, '{}', 'failed', 0)`;
      await old.sql`
        INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, status_code, latency_ms, error)
        VALUES (${`dlv_${i}`}, 1, 0, NULL, 1, ${before}), (${`dlv_${i}`}, 2, 0, 200, 1, NULL)`;
    }
    await migrate(old.sql, "webhooks", webhookMigrations);
    const errors = await old.sql<{ error: string | null }[]>`
      SELECT error FROM webhook_attempts ORDER BY delivery_id, attempt`;
    const reasons = await old.sql<
      { disabled_reason: string }[]
    >`SELECT disabled_reason FROM webhooks ORDER BY id`;
    expect(errors.map((r) => r.error)).toEqual(kept.flatMap(([, after]) => [after, null]));
    // A reason's last attempt is rewritten as the attempt's error is ("status 307" was already so).
    expect(reasons.map((r) => r.disabled_reason)).toEqual(
      kept.map(([, after, last]) => reason(last === "status 307" ? last : after)),
    );
  } finally {
    await old.drop();
  }
});
