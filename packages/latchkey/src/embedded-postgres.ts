import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import type { WorkerReply } from "./pglite-worker.ts";

/**
 * Embedded PostgreSQL: PGlite (PostgreSQL compiled to WASM) kept under
 * DATA_DIR, served over the PostgreSQL wire protocol on a loopback port, so the
 * same `postgres` client code runs against it and against a real server
 * (PgliteServer, not pglite-socket: see pglite-server.ts for why). Both run on
 * a worker thread of their own (pglite-worker.ts): the database's WASM work
 * then takes a second core instead of time from the event loop serving HTTP.
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
  mkdirSync(dataDir, { recursive: true });
  const worker = startWorker(join(dataDir, "pgdata"));
  let closing = false;
  const exited = new Promise<number>((resolve) => worker.once("exit", resolve));
  const port = await new Promise<number>((resolve, reject) => {
    worker.once("message", (reply: WorkerReply) =>
      "port" in reply ? resolve(reply.port) : reject(new Error(`embedded PostgreSQL: ${reply.error}`)),
    );
    worker.once("error", reject);
    void exited.then((code) =>
      reject(new Error(`embedded PostgreSQL stopped while starting (exit ${code})`)),
    );
  });
  // Past start-up, losing the database's thread leaves nothing to serve from.
  worker.on("error", (err) => onLost(err));
  void exited.then((code) => {
    if (!closing) onLost(new Error(`embedded PostgreSQL stopped (exit ${code})`));
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  writeFileSync(lockfile(dataDir), JSON.stringify({ pid: process.pid, url } satisfies Lockfile));
  return {
    url,
    async close() {
      closing = true;
      rmSync(lockfile(dataDir), { force: true });
      worker.postMessage("close");
      await exited;
    },
  };
}

/**
 * pglite-worker.ts on a thread of its own. A worker does not inherit tsx's
 * loader, which runs this TypeScript, so the worker registers it before it
 * imports its module (a data: URL is an ES module whose imports are absolute).
 */
function startWorker(pgdata: string): Worker {
  const entry = new URL("./pglite-worker.ts", import.meta.url).href;
  const tsx = import.meta.resolve("tsx/esm/api");
  const source = `import { register } from ${JSON.stringify(tsx)}; register(); await import(${JSON.stringify(entry)});`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(source)}`), {
    workerData: { pgdata },
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
