import { auditTableSql, type Migration } from "@latchkey/runtime";
import { PORTAL_AUDIT_TABLE } from "./store/postgres-portal-store.ts";

/**
 * The portal context's tables, applied with migrate(sql, "portal", portalMigrations). Times are
 * bigint unix milliseconds. Plain SQL that runs on PostgreSQL 15 and on PGlite alike. Append new
 * versions; never edit an applied one.
 *
 * A session keeps only the SHA-256 of its code and of its token, each unique, so a credential finds
 * its session by index and the table holds nothing that opens one.
 */
export const portalMigrations: Migration[] = [
  {
    version: 1,
    name: "portals, sessions and the audit log",
    sql: `
CREATE TABLE portals (
  id text PRIMARY KEY,
  workspace_id text NOT NULL,
  api_id text NOT NULL,
  name text NOT NULL,
  slug text,
  title text,
  accent_color text,
  logo_url text,
  session_ttl_ms bigint NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX portals_workspace_page ON portals (workspace_id, id COLLATE "C");
CREATE UNIQUE INDEX portals_slug ON portals (workspace_id, slug) WHERE slug IS NOT NULL;

CREATE TABLE portal_sessions (
  id text PRIMARY KEY,
  workspace_id text NOT NULL,
  portal_id text NOT NULL REFERENCES portals (id) ON DELETE CASCADE,
  external_id text NOT NULL,
  scopes text[] NOT NULL,
  preview boolean NOT NULL,
  return_url text,
  code_hash text UNIQUE,
  code_expires_at bigint NOT NULL,
  token_hash text UNIQUE,
  expires_at bigint,
  revoked_at bigint,
  created_at bigint NOT NULL
);
CREATE INDEX portal_sessions_workspace ON portal_sessions (workspace_id, created_at);
${auditTableSql(PORTAL_AUDIT_TABLE, ["root_key", "portal_session"])}
`,
  },
  {
    version: 2,
    name: "a session's encrypt_key on its portal's API",
    sql: `
-- True when the session may reroll and create recoverable keys: its portal's API held one when it was
-- minted, and the minting root key held encrypt_key on that API (services/portal/src/rpc/createSession.ts).
ALTER TABLE portal_sessions ADD COLUMN encrypt_key boolean NOT NULL DEFAULT false;
`,
  },
  {
    version: 3,
    name: "a session's rbac permissions for copying a rerolled key's roles and permissions",
    sql: `
-- Of rbac.*.add_role_to_key and rbac.*.add_permission_to_key, those the minting root key held, kept for
-- a keys:reroll session (not a preview): a reroll hands them on to copy a key's roles and direct
-- permissions to its new key (services/portal/src/rpc/createSession.ts, rpc/rerollKey.ts).
ALTER TABLE portal_sessions ADD COLUMN rbac_permissions text[] NOT NULL DEFAULT '{}';
`,
  },
];
