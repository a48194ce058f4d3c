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
  const socket = unixSocketOf(url);
  return postgres(socket?.url ?? url, {
    ...(socket ? { path: socket.path } : {}),
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
 * libpq's spelling of a Unix-domain socket, `postgres://user@localhost/db?host=/dir`
 * (`dir` holds `.s.PGSQL.<port>`; the embedded database listens so). The
 * postgres client takes the socket as its `path` option, and would otherwise
 * send `host` to the server as a run-time setting.
 */
function unixSocketOf(url: string): { url: string; path: string } | undefined {
  if (!url.includes("host=")) return undefined;
  const parsed = new URL(url);
  const dir = parsed.searchParams.get("host");
  if (!dir?.startsWith("/")) return undefined;
  parsed.searchParams.delete("host");
  return { url: parsed.toString(), path: `${dir}/.s.PGSQL.${parsed.port || 5432}` };
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
