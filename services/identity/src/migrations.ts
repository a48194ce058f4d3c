import { auditTableSql, type Migration } from "@latchkey/runtime";

/**
 * The identity context's tables, applied with migrate(sql, "identity", identityMigrations).
 * Times are bigint unix milliseconds. Plain SQL that runs on PostgreSQL 15 and
 * on PGlite alike. Append new versions; never edit an applied one.
 *
 * Lists page by id in byte order (COLLATE "C"), the order the in-memory store
 * uses too, whatever the database's default collation.
 */
export const identityMigrations: Migration[] = [
  {
    version: 1,
    name: "identities, identity rate limits, permissions, roles and role permissions",
    sql: `
CREATE TABLE identities (
  id text PRIMARY KEY,
  workspace_id text NOT NULL,
  external_id text NOT NULL,
  meta jsonb,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  UNIQUE (workspace_id, external_id)
);
CREATE INDEX identities_workspace_page ON identities (workspace_id, id COLLATE "C");

CREATE TABLE identity_ratelimits (
  id text PRIMARY KEY,
  identity_id text NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
  name text NOT NULL,
  "limit" bigint NOT NULL,
  duration bigint NOT NULL,
  auto_apply boolean NOT NULL DEFAULT false,
  UNIQUE (identity_id, name)
);

CREATE TABLE permissions (
  id text PRIMARY KEY,
  workspace_id text NOT NULL,
  name text NOT NULL,
  slug text NOT NULL,
  description text,
  created_at bigint NOT NULL,
  UNIQUE (workspace_id, slug)
);
CREATE INDEX permissions_workspace_page ON permissions (workspace_id, id COLLATE "C");

CREATE TABLE roles (
  id text PRIMARY KEY,
  workspace_id text NOT NULL,
  name text NOT NULL,
  description text,
  created_at bigint NOT NULL,
  UNIQUE (workspace_id, name)
);
CREATE INDEX roles_workspace_page ON roles (workspace_id, id COLLATE "C");

CREATE TABLE role_permissions (
  role_id text NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
  permission_id text NOT NULL REFERENCES permissions (id) ON DELETE CASCADE,
  PRIMARY KEY (role_id, permission_id)
);
CREATE INDEX role_permissions_permission_id ON role_permissions (permission_id);
`,
  },
  {
    version: 2,
    name: "identity_audit_log",
    // The audit records of the identity context's management changes (packages/runtime/src/audit.ts).
    sql: auditTableSql("identity_audit_log"),
  },
  {
    version: 3,
    name: "identity_ip_allow_list",
    // An identity's IP allow-list: the CIDRs its keys may be verified from (empty allows any).
    sql: "ALTER TABLE identities ADD COLUMN ip_allow_list text[] NOT NULL DEFAULT '{}';",
  },
];
