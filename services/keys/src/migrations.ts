import type { Migration } from "@latchkey/runtime";

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
];
