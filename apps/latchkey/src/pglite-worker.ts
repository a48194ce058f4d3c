import { parentPort, workerData } from "node:worker_threads";
import { PGlite } from "@electric-sql/pglite";
import { PgliteServer } from "./pglite-server.ts";

/**
 * The embedded PostgreSQL's own thread (embedded-postgres.ts): PGlite and its
 * wire-protocol server run here, so the database's WASM work uses a core of its
 * own instead of the event loop that serves HTTP. Tells the parent once it
 * listens on `socket`, or why it could not start; a "close" message closes the
 * server and the database (which flushes it to the data directory), then the
 * thread ends (process.exit in a worker ends only the worker).
 */
export type WorkerReply = { listening: true } | { error: string };

const port = parentPort;
if (port === null) throw new Error("pglite-worker.ts runs as a worker thread");
const { pgdata, socket } = workerData as { pgdata: string; socket: string };

try {
  const db = await PGlite.create({ dataDir: pgdata });
  const server = new PgliteServer(db);
  port.once("message", async () => {
    await server.close();
    await db.close();
    process.exit(0);
  });
  await server.listen(socket);
  port.postMessage({ listening: true } satisfies WorkerReply);
} catch (err) {
  port.postMessage({ error: err instanceof Error ? err.message : String(err) } satisfies WorkerReply);
  process.exit(1);
}
