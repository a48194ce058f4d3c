import { resolve } from "node:path";
import { identityMigrations } from "@latchkey/identity";
import { keysMigrations } from "@latchkey/keys";
import { portalMigrations } from "@latchkey/portal";
import { ratelimitMigrations } from "@latchkey/ratelimit";
import {
  CONTEXTS,
  type ContextName,
  connect,
  env,
  type Migration,
  migrate,
  type Sql,
} from "@latchkey/runtime";
import { webhookMigrations } from "@latchkey/webhooks";
import { type EmbeddedPostgres, runningEmbedded, startEmbeddedPostgres } from "./embedded-postgres.ts";

export const dataDir = () => resolve(env.string("DATA_DIR", ".latchkey")!);

/**
 * The PostgreSQL migrations of each context whose row in contexts.ts says it keeps tables there
 * (analytics keeps its own only where it runs without ClickHouse: createEmbeddedAnalyticsDeps).
 */
const migrations: Record<ContextName, readonly Migration[]> = {
  keys: keysMigrations,
  ratelimit: ratelimitMigrations,
  identity: identityMigrations,
  analytics: [],
  webhooks: webhookMigrations,
  portal: portalMigrations,
};

/** Every context's migrations, applied in one place for the all-in-one process and the CLI. */
export async function migrateAll(sql: Sql): Promise<void> {
  for (const [name, context] of Object.entries(CONTEXTS)) {
    if (context.postgres) await migrate(sql, name, migrations[name as ContextName]);
  }
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
  /**
   * How DATABASE_URL's server is waited for (npm start: bootstrap.ts's `until`, tried with backoff
   * while the process is not ready); by default the first failure throws.
   */
  until?: (what: string, attempt: () => Promise<void>) => Promise<void>;
}): Promise<Database> {
  const url = env.string("DATABASE_URL");
  if (url) {
    const sql = connect(url);
    const until = options.until ?? ((_: string, attempt: () => Promise<void>) => attempt());
    try {
      await until("PostgreSQL", () => migrateAll(sql));
    } catch (err) {
      await sql.end({ timeout: 1 });
      throw err;
    }
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
