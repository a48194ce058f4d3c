import net from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { testServerUrl } from "../testing/database.ts";
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
});
