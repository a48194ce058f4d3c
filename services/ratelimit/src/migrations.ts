import { auditTableSql, type Migration } from "@latchkey/runtime";

/** Applied at start by `migrate(sql, "ratelimit", ratelimitMigrations)`; valid on PostgreSQL 15 and PGlite. */
export const ratelimitMigrations: readonly Migration[] = [
  {
    version: 1,
    name: "namespaces and overrides",
    sql: `
      CREATE TABLE ratelimit_namespaces (
        id text PRIMARY KEY,
        workspace_id text NOT NULL,
        name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (workspace_id, name)
      );
      CREATE TABLE ratelimit_overrides (
        id text PRIMARY KEY,
        namespace_id text NOT NULL REFERENCES ratelimit_namespaces (id) ON DELETE CASCADE,
        identifier text NOT NULL,
        "limit" bigint NOT NULL CHECK ("limit" >= 0),
        duration bigint NOT NULL CHECK (duration > 0),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (namespace_id, identifier)
      );
      CREATE INDEX ratelimit_overrides_page ON ratelimit_overrides (namespace_id, id COLLATE "C");
    `,
  },
  {
    version: 2,
    name: "ratelimit_audit_log",
    // The audit records of the ratelimit context's management changes (packages/runtime/src/audit.ts).
    sql: auditTableSql("ratelimit_audit_log"),
  },
  {
    version: 3,
    name: "ratelimit_memory_instances",
    // The processes counting rate limits in their own memory on this database, kept alive by a heartbeat
    // (instances.ts): a second one refuses to start rather than count every budget a second time.
    sql: `
      CREATE TABLE ratelimit_memory_instances (
        id text PRIMARY KEY,
        host text NOT NULL,
        pid integer NOT NULL,
        node text NOT NULL,
        allowed boolean NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now(),
        heartbeat_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      );
    `,
  },
];
