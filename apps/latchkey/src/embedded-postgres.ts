import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import type { WorkerReply } from "./pglite-worker.ts";

/**
 * Embedded PostgreSQL: PGlite (PostgreSQL compiled to WASM) kept under
 * DATA_DIR, served over the PostgreSQL wire protocol on a Unix socket, so the
 * same `postgres` client code runs against it and against a real server
 * (PgliteServer, not pglite-socket: see pglite-server.ts for why). Both run on
 * a worker thread of their own (pglite-worker.ts): the database's WASM work
 * then takes a second core instead of time from the event loop serving HTTP.
 *
 * PGlite takes every connection as its superuser, with no password, so the
 * socket is the lock: DATA_DIR/.s.PGSQL.5432, mode 0600, in DATA_DIR made
 * 0700. Only the user running Latchkey (and root) can connect; no TCP port
 * is opened.
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

/** The socket's name in its directory: the one libpq and the postgres client derive from port 5432. */
export const SOCKET_NAME = ".s.PGSQL.5432";
/** Longest Unix socket path that binds on Linux (107 bytes) and macOS (103). */
const MAX_SOCKET_PATH = 103;

/**
 * Creates `dir` when missing and makes it 0700: it holds the database, its
 * socket and the secrets (root key, encryption key), for this user only.
 */
export function privateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    chmodSync(dir, 0o700);
  } catch (err) {
    throw new Error(
      `DATA_DIR ${dir} must be a directory this user owns, to make it private (0700): ${(err as Error).message}`,
    );
  }
}

export async function startEmbeddedPostgres(
  dataDir: string,
  onLost: (err: Error) => void,
): Promise<EmbeddedPostgres> {
  const running = runningEmbedded(dataDir);
  if (running) {
    throw new Error(
      `Latchkey is already running on ${dataDir} (pid ${running.pid}); stop it or set DATA_DIR to another directory`,
    );
  }
  privateDir(dataDir);
  // A data directory too deep for a socket path gets a private directory of its own under the system's temp.
  const socketDir =
    Buffer.byteLength(join(dataDir, SOCKET_NAME)) <= MAX_SOCKET_PATH
      ? dataDir
      : mkdtempSync(join(tmpdir(), "latchkey-"));
  const removeSocketDir = () => {
    if (socketDir !== dataDir) rmSync(socketDir, { recursive: true, force: true });
  };
  const worker = startWorker(join(dataDir, "pgdata"), join(socketDir, SOCKET_NAME));
  let closing = false;
  const exited = new Promise<number>((resolve) => worker.once("exit", resolve));
  try {
    await new Promise<void>((resolve, reject) => {
      worker.once("message", (reply: WorkerReply) =>
        "listening" in reply ? resolve() : reject(new Error(`embedded PostgreSQL: ${reply.error}`)),
      );
      worker.once("error", reject);
      void exited.then((code) =>
        reject(new Error(`embedded PostgreSQL stopped while starting (exit ${code})`)),
      );
    });
  } catch (err) {
    removeSocketDir();
    throw err;
  }
  // Past start-up, losing the database's thread leaves nothing to serve from.
  worker.on("error", (err) => onLost(err));
  void exited.then((code) => {
    if (!closing) onLost(new Error(`embedded PostgreSQL stopped (exit ${code})`));
  });
  // libpq's form for a Unix socket: the directory in `host`, the port naming the socket in it.
  const url = `postgres://postgres@localhost:5432/postgres?host=${encodeURIComponent(socketDir)}`;
  writeFileSync(lockfile(dataDir), JSON.stringify({ pid: process.pid, url } satisfies Lockfile), {
    mode: 0o600,
  });
  return {
    url,
    async close() {
      closing = true;
      rmSync(lockfile(dataDir), { force: true });
      worker.postMessage("close");
      await exited;
      removeSocketDir();
    },
  };
}

/**
 * pglite-worker.ts on a thread of its own. A worker does not inherit tsx's
 * loader, which runs this TypeScript, so the worker registers it before it
 * imports its module (a data: URL is an ES module whose imports are absolute).
 */
function startWorker(pgdata: string, socket: string): Worker {
  const entry = new URL("./pglite-worker.ts", import.meta.url).href;
  const tsx = import.meta.resolve("tsx/esm/api");
  const source = `import { register } from ${JSON.stringify(tsx)}; register(); await import(${JSON.stringify(entry)});`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(source)}`), {
    workerData: { pgdata, socket },
  });
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
