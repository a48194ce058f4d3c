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
/**
 * An error text kept before migration 5 in the owner's words of sender.ts (ATTEMPT_ERRORS), as SQL
 * over `text`: what an attempt got is kept (a status, a timeout), what node said is not.
 */
const ownersWords = (text: string) => `CASE
  WHEN ${text} ~ '^answered [0-9]+: redirects are not followed$'
    THEN 'status ' || substring(${text} from '^answered ([0-9]+)') || ': the answer was a redirect, which is not followed'
  WHEN ${text} ~ '^answered [0-9]+$' THEN 'status ' || substring(${text} from '^answered ([0-9]+)$')
  WHEN ${text} ~ '^(status [0-9]+|timed out after [0-9]+ ms)$' OR ${text} = 'the URL is not valid' THEN ${text}
  WHEN ${text} LIKE 'refused: % is not http or https' THEN 'the URL is not http or https'
  WHEN ${text} LIKE 'refused: % resolves to %' OR ${text} LIKE '%getaddrinfo%' OR ${text} LIKE '%ENOTFOUND%'
       OR ${text} LIKE '%EAI_AGAIN%' OR ${text} LIKE '% has no address'
    THEN 'address not allowed or not found: the host did not resolve to a public address; nothing was sent'
  WHEN ${text} LIKE 'refused: %' THEN 'address not allowed: deliveries go to public addresses only; nothing was sent'
  WHEN ${text} LIKE 'the attempt could not be signed%' THEN 'the attempt could not be signed'
  WHEN ${text} LIKE '%ECONNRESET%' OR ${text} = 'socket hang up' THEN 'the connection closed before an answer'
  ELSE 'could not connect' END`;

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
  {
    version: 4,
    name: "webhook_deliveries claimed fairly between workspaces",
    // The claim goes round the workspaces with due deliveries (store/postgres-webhook-store.ts):
    // it steps from one workspace's pending deliveries to the next's and reads the first due of
    // each webhook, so its cost follows the workspaces and webhooks waiting, not the rows. A claim
    // marks its deliveries leased until its lease ends, so the attempts in flight per workspace and
    // per webhook are counted across every worker from the few leased rows. Nothing else read the
    // due index.
    sql: `
ALTER TABLE webhook_deliveries ADD COLUMN leased_until bigint;
CREATE INDEX webhook_deliveries_pending_workspace
  ON webhook_deliveries (workspace_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_pending_webhook
  ON webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_leased
  ON webhook_deliveries (workspace_id, webhook_id) WHERE leased_until IS NOT NULL;
DROP INDEX webhook_deliveries_due;
`,
  },
  {
    version: 5,
    name: "delivery errors in the owner's words",
    // Errors were kept as node said them, which told a workspace what an internal name resolved
    // to ("localhost resolves to 127.0.0.1 ...", "getaddrinfo ENOTFOUND ..."); the attempts and the
    // reasons of disabled webhooks kept since are put in the words sender.ts now keeps.
    sql: `
UPDATE webhook_attempts SET error = ${ownersWords("error")}
WHERE error IS NOT NULL AND error IS DISTINCT FROM (${ownersWords("error")});
UPDATE webhooks SET disabled_reason = regexp_replace(disabled_reason, 'the last: .*\\. Fix the receiver',
  'the last: ' || (${ownersWords("substring(disabled_reason from 'the last: (.*)\\. Fix the receiver')")}) || '. Fix the receiver')
WHERE disabled_reason LIKE '%the last: %. Fix the receiver%';
`,
  },
];
