import postgres from "postgres";

export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;

export interface Migration {
  /** Increasing version within one service's migrations. */
  version: number;
  name: string;
  sql: string;
}

/**
 * Connects with settings that suit both PostgreSQL and PGlite behind pglite-socket.
 * `settings` are run-time parameters every connection of the pool starts with
 * (e.g. synchronous_commit), so they cost no statement.
 */
export function connect(url: string, options: { max?: number; settings?: Record<string, string> } = {}): Sql {
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    // bigint columns come back as JS numbers: every value we store (credits, ms timestamps) fits in 2^53.
    types: {
      bigint: { to: 20, from: [20], serialize: (v: number) => String(v), parse: (v: string) => Number(v) },
    },
    transform: { undefined: null },
    connection: { application_name: "latchkey", ...options.settings },
  });
}

/**
 * Applies each migration of `scope` once, in version order, under an advisory
 * lock so concurrently starting replicas do not race.
 */
export async function migrate(sql: Sql, scope: string, migrations: readonly Migration[]): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext(${`latchkey-migrate`}))`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
      scope text NOT NULL, version int NOT NULL, name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (scope, version))`;
    const done = new Set(
      (await tx<{ version: number }[]>`SELECT version FROM schema_migrations WHERE scope = ${scope}`).map(
        (r) => r.version,
      ),
    );
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.sql);
      await tx`INSERT INTO schema_migrations (scope, version, name) VALUES (${scope}, ${m.version}, ${m.name})`;
    }
  });
}
