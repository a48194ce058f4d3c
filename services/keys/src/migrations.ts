import { auditTableSql, type Migration } from "@latchkey/runtime";
import { forwardAuthPoliciesMigration } from "./store/forward-auth-policies-migration.ts";

/**
 * The keys context's tables, applied with migrate(sql, "keys", keysMigrations).
 * Times are bigint unix milliseconds. Plain SQL that runs on PostgreSQL 15 and
 * on PGlite alike. Append new versions; never edit an applied one.
 */
export const keysMigrations: Migration[] = [
  {
    version: 1,
    name: "workspaces, root keys, apis, keys and key rate limits",
    sql: `
CREATE TABLE workspaces (
  id text PRIMARY KEY,
  name text NOT NULL UNIQUE,
  created_at bigint NOT NULL
);
INSERT INTO workspaces (id, name, created_at)
  VALUES ('ws_default', 'default', (extract(epoch FROM now()) * 1000)::bigint);

CREATE TABLE root_keys (
  id text PRIMARY KEY,
  workspace_id text NOT NULL REFERENCES workspaces (id),
  hash text NOT NULL UNIQUE,
  start text NOT NULL,
  name text,
  permissions text[] NOT NULL DEFAULT '{}',
  created_at bigint NOT NULL,
  revoked_at bigint
);

CREATE TABLE apis (
  id text PRIMARY KEY,
  workspace_id text NOT NULL REFERENCES workspaces (id),
  name text NOT NULL,
  created_at bigint NOT NULL,
  deleted_at bigint
);
CREATE INDEX apis_workspace_id ON apis (workspace_id);

CREATE TABLE keys (
  id text PRIMARY KEY,
  workspace_id text NOT NULL REFERENCES workspaces (id),
  api_id text NOT NULL REFERENCES apis (id),
  hash text NOT NULL UNIQUE,
  start text NOT NULL,
  name text,
  meta jsonb,
  external_id text,
  identity_id text,
  permissions text[] NOT NULL DEFAULT '{}',
  roles text[] NOT NULL DEFAULT '{}',
  expires bigint,
  enabled boolean NOT NULL DEFAULT true,
  remaining bigint CHECK (remaining >= 0),
  refill_interval text CHECK (refill_interval IN ('daily', 'monthly')),
  refill_amount bigint,
  refill_day int CHECK (refill_day BETWEEN 1 AND 31),
  last_refill_at bigint,
  created_at bigint NOT NULL,
  updated_at bigint,
  deleted_at bigint
);
CREATE INDEX keys_api_id ON keys (api_id, id);
CREATE INDEX keys_external_id ON keys (workspace_id, external_id) WHERE external_id IS NOT NULL;

CREATE TABLE key_ratelimits (
  id text PRIMARY KEY,
  key_id text NOT NULL REFERENCES keys (id) ON DELETE CASCADE,
  name text NOT NULL,
  "limit" bigint NOT NULL,
  duration bigint NOT NULL,
  auto_apply boolean NOT NULL DEFAULT false,
  UNIQUE (key_id, name)
);
`,
  },
  {
    version: 2,
    name: "recoverable keys, key byte length, refill schedule function",
    sql: `
ALTER TABLE keys ADD COLUMN byte_length int;

CREATE TABLE encrypted_keys (
  key_id text PRIMARY KEY REFERENCES keys (id) ON DELETE CASCADE,
  workspace_id text NOT NULL REFERENCES workspaces (id),
  ciphertext text NOT NULL,
  iv text NOT NULL,
  tag text NOT NULL,
  kek_id text NOT NULL
);

CREATE INDEX keys_refill ON keys (id) WHERE refill_interval IS NOT NULL AND deleted_at IS NULL;

-- The latest refill instant (unix ms) at or before $3 for a schedule: 00:00 UTC
-- daily, or monthly on day $2 clamped to the month's last day. NULL without a
-- schedule. The same arithmetic as latestRefillAt in refills.ts.
CREATE FUNCTION keys_latest_refill(text, int, bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE $1
    WHEN 'daily' THEN ($3 / 86400000) * 86400000
    WHEN 'monthly' THEN (
      SELECT CASE WHEN this_month <= $3 THEN this_month ELSE last_month END
      FROM (
        SELECT
          (extract(epoch FROM m + (least($2, extract(day FROM m + interval '1 month' - interval '1 day')::int) - 1)
            * interval '1 day') * 1000)::bigint AS this_month,
          (extract(epoch FROM p + (least($2, extract(day FROM p + interval '1 month' - interval '1 day')::int) - 1)
            * interval '1 day') * 1000)::bigint AS last_month
        FROM (SELECT date_trunc('month', to_timestamp($3 / 1000.0) AT TIME ZONE 'UTC') AS m) months,
          LATERAL (SELECT m - interval '1 month' AS p) previous
      ) instants)
  END
$fn$;
`,
  },
  {
    version: 3,
    name: "keys_latest_refill as one expression, so PostgreSQL inlines it",
    sql: `
-- The same arithmetic as version 2 without a subquery: a single-expression SQL
-- function is inlined into the calling statement instead of being run through
-- the function executor once per call (verification calls it on its hot path).
CREATE OR REPLACE FUNCTION keys_latest_refill(text, int, bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE $1
    WHEN 'daily' THEN ($3 / 86400000) * 86400000
    WHEN 'monthly' THEN (extract(epoch FROM
      CASE WHEN date_trunc('month', to_timestamp($3 / 1000.0) AT TIME ZONE 'UTC')
          + (least($2, extract(day FROM date_trunc('month', to_timestamp($3 / 1000.0) AT TIME ZONE 'UTC')
            + interval '1 month' - interval '1 day')::int) - 1) * interval '1 day'
          <= to_timestamp($3 / 1000.0) AT TIME ZONE 'UTC'
        THEN date_trunc('month', to_timestamp($3 / 1000.0) AT TIME ZONE 'UTC')
          + (least($2, extract(day FROM date_trunc('month', to_timestamp($3 / 1000.0) AT TIME ZONE 'UTC')
            + interval '1 month' - interval '1 day')::int) - 1) * interval '1 day'
        ELSE date_trunc('month', to_timestamp($3 / 1000.0) AT TIME ZONE 'UTC') - interval '1 month'
          + (least($2, extract(day FROM date_trunc('month', to_timestamp($3 / 1000.0) AT TIME ZONE 'UTC')
            - interval '1 day')::int) - 1) * interval '1 day'
      END) * 1000)::bigint
  END
$fn$;
`,
  },
  {
    version: 4,
    name: "deleted roles and permissions taken off keys once per deletion",
    sql: `
-- One row per role or permission the identity service deleted and the keys
-- service took off its keys: every keys instance sees the deletion, the first
-- to insert its id applies it, the others do nothing (so a name re-added in
-- between is not taken off again).
CREATE TABLE keys_deleted_grants (
  id text PRIMARY KEY,
  workspace_id text NOT NULL,
  list text NOT NULL CHECK (list IN ('roles', 'permissions')),
  name text NOT NULL,
  applied_at bigint NOT NULL
);
`,
  },
  {
    version: 5,
    name: "keys.last_used_at",
    sql: `
-- The last verification of the key (unix ms), written at most once a second
-- per keys instance for all keys verified meanwhile (last-used.ts).
ALTER TABLE keys ADD COLUMN last_used_at bigint;
`,
  },
  {
    version: 6,
    name: "lastUsedAt in a narrow table of its own",
    sql: `
-- Writing when keys were last verified touched the wide keys row: a new row
-- version and an entry in each of its indexes, per key verified in the second.
-- With a million keys verified at random that cost PostgreSQL ~90 µs per
-- verification, more than the verification itself. Here it is a narrow row
-- with one index, left with room on its page for updates in place (HOT), and
-- the keys table, which every cache miss and credit spend reads, stays unchurned.
-- No foreign key: its check would lock the keys row again; a permanently
-- deleted key's row goes with it (deleteKey).
CREATE TABLE key_last_used (
  key_id text PRIMARY KEY,
  at bigint NOT NULL
) WITH (fillfactor = 70);
INSERT INTO key_last_used (key_id, at) SELECT id, last_used_at FROM keys WHERE last_used_at IS NOT NULL;
ALTER TABLE keys DROP COLUMN last_used_at;
`,
  },
  {
    version: 7,
    name: "a key's hash unique per workspace",
    sql: `
-- A key's hash was unique across every workspace, so importing a hash another
-- workspace held failed, which told the importer that the key string exists
-- elsewhere, and let the first tenant to import a known hash keep others from
-- it. Verification knows the caller's workspace and looks a key up by
-- (workspace, hash), so a hash need only be unique within its workspace: the
-- same string in two workspaces is two keys that never meet. Root keys keep
-- their globally unique hash (README: What is unique where).
CREATE UNIQUE INDEX keys_workspace_hash ON keys (workspace_id, hash);
ALTER TABLE keys DROP CONSTRAINT keys_hash_key;
`,
  },
  {
    version: 8,
    name: "keys_audit_log",
    // The audit records of the keys context's management changes, written in the change's
    // transaction (packages/runtime/src/audit.ts has the shape all contexts share).
    sql: auditTableSql("keys_audit_log"),
  },
  {
    version: 9,
    name: "the balance a key was last given, and when",
    sql: `
-- What credits.low is a fraction of for a key without a refill, and the start of
-- its credit period: set by createKey, updateKey and updateCredits "set", left alone
-- by spends, increment and decrement (credit-events.ts). Keys that existed before
-- take the balance they hold now, given when they were last updated.
ALTER TABLE keys ADD COLUMN credits_given bigint, ADD COLUMN credits_given_at bigint;
UPDATE keys SET credits_given = remaining, credits_given_at = COALESCE(updated_at, created_at)
  WHERE remaining IS NOT NULL;
`,
  },
  {
    version: 10,
    name: "checksummed key format, leak policy, leaked keys, IP allow-lists, expiry notices",
    sql: `
-- An API's key format (leaks/key-format.ts) and what a leak report does to its
-- keys; a key's leak, once detected (the conditional update that sets it is what
-- makes a detection happen once across replicas). Leak detections are made by
-- Latchkey itself, so the audit table takes the "system" actor too.
ALTER TABLE apis ADD COLUMN key_format text NOT NULL DEFAULT 'plain' CHECK (key_format IN ('plain', 'checksum')),
  ADD COLUMN leak_policy text NOT NULL DEFAULT 'revoke' CHECK (leak_policy IN ('revoke', 'flag'));
ALTER TABLE keys ADD COLUMN leaked_at bigint;
-- IP allow-lists (allow-list.ts): an API's applies to each of its keys, a key's narrows it.
ALTER TABLE apis ADD COLUMN ip_allow_list text[] NOT NULL DEFAULT '{}';
ALTER TABLE keys ADD COLUMN ip_allow_list text[] NOT NULL DEFAULT '{}';
-- key.expiring (notices/expiring.ts): days before a key's expiry its API announces it (0: never),
-- and each notice sent, one row per key, kind and period (for expiring: the expiry it announced),
-- whose insert is what makes a notice go out once across replicas.
ALTER TABLE apis ADD COLUMN expiring_notice_days int NOT NULL DEFAULT 7
  CHECK (expiring_notice_days BETWEEN 0 AND 365);
CREATE TABLE key_notices (
  key_id text NOT NULL,
  kind text NOT NULL,
  period bigint NOT NULL,
  workspace_id text NOT NULL,
  api_id text NOT NULL,
  sent_at bigint NOT NULL,
  PRIMARY KEY (key_id, kind, period)
);
CREATE INDEX keys_expires ON keys (expires) WHERE expires IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX keys_hash ON keys (hash) WHERE deleted_at IS NULL;
ALTER TABLE keys_audit_log DROP CONSTRAINT keys_audit_log_actor_type_check;
ALTER TABLE keys_audit_log ADD CONSTRAINT keys_audit_log_actor_type_check
  CHECK (actor_type IN ('root_key', 'cli', 'system'));
`,
  },
  forwardAuthPoliciesMigration,
];
