import { PGlite } from "@electric-sql/pglite";
import { connect } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgliteServer } from "./pglite-server.ts";

let db: PGlite;
let server: PgliteServer;
let url: string;

// Booting PGlite takes seconds when the whole suite runs beside it.
beforeAll(async () => {
  db = await PGlite.create();
  server = new PgliteServer(db);
  url = `postgres://postgres@127.0.0.1:${await server.listen()}/postgres`;
}, 60_000);
afterAll(async () => {
  await server.close();
  await db.close();
});

describe("PgliteServer", { timeout: 30_000 }, () => {
  it("keeps pipelined statements of many connections apart, with transactions, and loses no update", async () => {
    const a = connect(url, { max: 16 });
    const b = connect(url, { max: 8 });
    await a`CREATE TABLE counter (id int PRIMARY KEY, n bigint NOT NULL)`;
    await a`INSERT INTO counter VALUES (1, 1000)`;
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 300; i++) {
      const sql = i % 2 ? a : b;
      work.push(sql`UPDATE counter SET n = n - 1 WHERE id = 1 AND n >= 1 RETURNING n`);
      work.push(sql`SELECT ${i}::int AS i, n FROM counter WHERE id = 1`);
      if (i % 25 === 0) {
        work.push(
          sql.begin(async (tx) => {
            await tx`UPDATE counter SET n = n - 1000 WHERE id = 1`;
            await tx`SELECT pg_sleep(0.001)`;
            await tx`UPDATE counter SET n = n + 1000 WHERE id = 1`;
          }),
        );
      }
    }
    const results = await Promise.allSettled(work);
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    expect((await a`SELECT n FROM counter`)[0]!.n).toBe(700);
    await Promise.all([a.end(), b.end()]);
  });

  it("rolls back the open transaction of a client that disconnects, and serves the others", async () => {
    const a = connect(url, { max: 1 });
    const b = connect(url, { max: 1 });
    await a`CREATE TABLE left_behind (id int)`;
    const reserved = await a.reserve();
    await reserved`BEGIN`;
    await reserved`INSERT INTO left_behind VALUES (1)`;
    const waiting = b`SELECT count(*)::int AS c FROM left_behind`;
    await a.end({ timeout: 0 });
    expect((await waiting)[0]!.c).toBe(0);
    await b.end();
  });
});
