import { auditTableSql, type Migration } from "@latchkey/runtime";

/**
 * The webhooks context's tables, applied with migrate(sql, "webhooks", webhookMigrations).
 * Times are bigint unix milliseconds. Plain SQL that runs on PostgreSQL 15 and on PGlite alike.
 * Append new versions; never edit an applied one.
 *
 * A delivery keeps its event (type, time, data) so that it can be sent, and sent again, without
 * anything else. The unique index on (webhook_id, event_id) of first deliveries makes intake
 * idempotent: an event handed over twice (a JetStream redelivery, a repeated DomainEvent id) is one
 * delivery. Redeliveries are rows of their own, apart from it.
 */
export const webhookMigrations: Migration[] = [
  {
    version: 1,
    name: "webhooks, deliveries and attempts",
    sql: `
CREATE TABLE webhooks (
  id text PRIMARY KEY,
  workspace_id text NOT NULL,
  url text NOT NULL,
  events text[] NOT NULL,
  description text NOT NULL,
  enabled boolean NOT NULL,
  disabled_reason text,
  sealed_secret text NOT NULL,
  consecutive_failures integer NOT NULL DEFAULT 0,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX webhooks_workspace_page ON webhooks (workspace_id, id COLLATE "C");

CREATE TABLE webhook_deliveries (
  id text PRIMARY KEY,
  webhook_id text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  workspace_id text NOT NULL,
  event_id text NOT NULL,
  event_type text NOT NULL,
  occurred_at bigint NOT NULL,
  data_json text NOT NULL,
  status text NOT NULL,
  attempts_made integer NOT NULL DEFAULT 0,
  next_attempt_at bigint,
  delivered_at bigint,
  created_at bigint NOT NULL,
  redelivery_of text
);
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (webhook_id, event_id) WHERE redelivery_of IS NULL;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_page ON webhook_deliveries (webhook_id, created_at DESC, id COLLATE "C" DESC);
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (created_at) WHERE status <> 'pending';

CREATE TABLE webhook_attempts (
  delivery_id text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt integer NOT NULL,
  attempted_at bigint NOT NULL,
  status_code integer,
  latency_ms integer NOT NULL,
  error text,
  PRIMARY KEY (delivery_id, attempt)
);
`,
  },
  {
    version: 2,
    name: "webhooks_audit_log",
    // The audit records of the webhooks context's changes (packages/runtime/src/audit.ts): a root
    // key's through the gateway, and the system's when the worker disables a webhook.
    sql: auditTableSql("webhooks_audit_log", ["root_key", "system"]),
  },
  {
    version: 3,
    name: "webhook_deliveries by status",
    // webhooks.listDeliveries with a status: one webhook's deliveries of that status, in page order,
    // without reading the others.
    sql: `CREATE INDEX webhook_deliveries_status_page
  ON webhook_deliveries (webhook_id, status, created_at DESC, id COLLATE "C" DESC);`,
  },
];
