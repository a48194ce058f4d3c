import net from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createTestDatabase, testServerUrl } from "../testing/database.ts";
import { connect } from "./db.ts";

afterEach(() => vi.restoreAllMocks());

describe("the PostgreSQL client (postgres, patched: patches/postgres@3.4.9.patch)", () => {
  it("sends a query at once on an idle connection, not behind every callback of the poll phase", async () => {
    const sql = connect(testServerUrl(), { max: 1 });
    try {
      await sql`SELECT 1`; // connected, so what follows writes only the query
      const write = vi.spyOn(net.Socket.prototype, "write");
      // Asked from a callback of the event loop (a timer here; a verification's spend, a socket's). A
      // setImmediate queued before the query runs, unpatched, before the client's own one writes it.
      const writtenBeforeCheck = await new Promise<number>((resolve, reject) => {
        setTimeout(() => {
          setImmediate(() => resolve(write.mock.calls.length));
          sql`SELECT 2 AS two`.then((rows) => expect(rows[0]!.two).toBe(2), reject);
        }, 0);
      });
      expect(writtenBeforeCheck).toBe(1);
    } finally {
      await sql.end({ timeout: 5 });
    }
  });

  it("answers a burst of queries asked in one task, each its own rows, in few writes", async () => {
    const sql = connect(testServerUrl(), { max: 1 });
    try {
      await sql`SELECT 1`;
      const write = vi.spyOn(net.Socket.prototype, "write");
      const asked = Array.from({ length: 200 }, (_, i) => sql<{ n: number }[]>`SELECT ${i}::int AS n`);
      expect((await Promise.all(asked)).map((rows) => rows[0]!.n)).toEqual(asked.map((_, i) => i));
      // One write for the first, then the rest pipelined behind it share writes (14 here; 200 unshared).
      expect(write.mock.calls.length).toBeLessThan(asked.length / 10);
    } finally {
      await sql.end({ timeout: 5 });
    }
  });
  describe("when a backend is terminated under a transaction", () => {
    /** Terminates the backend `pid` from a connection of its own. */
    const terminate = async (pid: number) => {
      const admin = connect(testServerUrl(), { max: 1 });
      try {
        await admin`SELECT pg_terminate_backend(${pid})`;
      } finally {
        await admin.end({ timeout: 5 });
      }
    };

    it("rejects the transaction with a connection error, runs none of its later queries outside it, and serves the next query", async () => {
      const db = await createTestDatabase();
      const thrown: unknown[] = [];
      const onUncaught = (err: unknown) => thrown.push(err);
      process.on("uncaughtException", onUncaught);
      try {
        await db.sql`CREATE TABLE after_close (n int)`;
        const sql = connect(db.url, { max: 1 });
        let pid = 0;
        // Its failure is taken at once: the transaction may fail while the test is still terminating it.
        const tx = sql
          .begin(async (t) => {
            const [row] = await t<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
            pid = row!.pid;
            // The transaction goes on after its query failed, as code that catches its own errors does.
            await t`SELECT pg_sleep(5)`.catch(() => {});
            await t`INSERT INTO after_close VALUES (1)`;
          })
          .then(
            () => undefined,
            (err: unknown) => err as { code?: string },
          );
        while (pid === 0) await new Promise((r) => setTimeout(r, 20));
        await terminate(pid);
        const failure = await tx;
        expect(["CONNECTION_CLOSED", "ECONNRESET", "57P01"]).toContain(failure?.code);
        // What unpatched postgres.js did next: a write to the closed socket, thrown where nothing catches it.
        await new Promise((r) => setTimeout(r, 300));
        expect(thrown).toEqual([]);
        // The pool's one connection reconnects and serves; the insert never ran, in or out of the transaction.
        expect(await sql<{ one: number }[]>`SELECT 1 AS one`).toEqual([{ one: 1 }]);
        expect(await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM after_close`).toEqual([{ n: 0 }]);
        await sql.end({ timeout: 5 });
      } finally {
        process.off("uncaughtException", onUncaught);
        await db.drop();
      }
    });
  });
});
