import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PgliteServer } from "./pglite-server.ts";

/**
 * Embedded PostgreSQL: PGlite (PostgreSQL compiled to WASM) kept under
 * DATA_DIR, served over the PostgreSQL wire protocol on a loopback port, so the
 * same `postgres` client code runs against it and against a real server
 * (PgliteServer, not pglite-socket: see pglite-server.ts for why).
 *
 * Only one process can hold the data directory open; it records its URL in
 * DATA_DIR/embedded.json so the CLI can reach the running instance.
 */
export interface EmbeddedPostgres {
  url: string;
  close(): Promise<void>;
}

interface Lockfile {
  pid: number;
  url: string;
}

const lockfile = (dataDir: string) => join(dataDir, "embedded.json");

export async function startEmbeddedPostgres(dataDir: string): Promise<EmbeddedPostgres> {
  const running = runningEmbedded(dataDir);
  if (running) {
    throw new Error(
      `Latchkey is already running on ${dataDir} (pid ${running.pid}); stop it or set DATA_DIR to another directory`,
    );
  }
  mkdirSync(dataDir, { recursive: true });
  const db = await PGlite.create({ dataDir: join(dataDir, "pgdata") });
  const server = new PgliteServer(db);
  const port = await server.listen(0, "127.0.0.1");
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  writeFileSync(lockfile(dataDir), JSON.stringify({ pid: process.pid, url } satisfies Lockfile));
  return {
    url,
    async close() {
      rmSync(lockfile(dataDir), { force: true });
      await server.close();
      await db.close();
    },
  };
}

/** The URL of a Latchkey process that holds `dataDir` open, if one is alive. */
export function runningEmbedded(dataDir: string): Lockfile | undefined {
  const file = lockfile(dataDir);
  if (!existsSync(file)) return undefined;
  try {
    const lock = JSON.parse(readFileSync(file, "utf8")) as Lockfile;
    process.kill(lock.pid, 0);
    return lock;
  } catch {
    return undefined;
  }
}

/** Opens the data directory directly, for the CLI when no Latchkey process holds it. */
export async function openEmbeddedDirectly(dataDir: string): Promise<EmbeddedPostgres> {
  return startEmbeddedPostgres(dataDir);
}
