import { resolve } from "node:path";
import { identityMigrations } from "@latchkey/identity";
import { keysMigrations } from "@latchkey/keys";
import { ratelimitMigrations } from "@latchkey/ratelimit";
import { connect, env, migrate, type Sql } from "@latchkey/runtime";
import { type EmbeddedPostgres, runningEmbedded, startEmbeddedPostgres } from "./embedded-postgres.ts";

export const dataDir = () => resolve(env.string("DATA_DIR", ".latchkey")!);

/** Every context's migrations, applied in one place for the all-in-one process and the CLI. */
export async function migrateAll(sql: Sql): Promise<void> {
  await migrate(sql, "keys", keysMigrations);
  await migrate(sql, "ratelimit", ratelimitMigrations);
  await migrate(sql, "identity", identityMigrations);
}

export interface Database {
  sql: Sql;
  /** Where `sql` connects, for pools of its own (the credit spends' connection). */
  url: string;
  /** Where it came from, for the start-up banner. */
  description: string;
  close(): Promise<void>;
}

/**
 * DATABASE_URL when set; otherwise the embedded PostgreSQL under DATA_DIR,
 * reached through the running Latchkey process when one holds it open
 * (`reuseRunning`, for the CLI), or opened by this process.
 */
export async function openDatabase(options: {
  reuseRunning: boolean;
  /** The embedded database's thread ended unexpectedly (it cannot come back: stop the process). */
  onLost: (err: Error) => void;
}): Promise<Database> {
  const url = env.string("DATABASE_URL");
  if (url) {
    const sql = connect(url);
    await migrateAll(sql);
    return { sql, url, description: "PostgreSQL from DATABASE_URL", close: () => sql.end({ timeout: 5 }) };
  }
  const dir = dataDir();
  const running = options.reuseRunning ? runningEmbedded(dir) : undefined;
  const embedded: EmbeddedPostgres | undefined = running
    ? undefined
    : await startEmbeddedPostgres(dir, options.onLost);
  const embeddedUrl = (running ?? embedded)!.url;
  const sql = connect(embeddedUrl, { max: running ? 2 : 16 });
  await migrateAll(sql);
  return {
    sql,
    url: embeddedUrl,
    description: `embedded PostgreSQL (PGlite) in ${dir}`,
    async close() {
      await sql.end({ timeout: 5 });
      await embedded?.close();
    },
  };
}
