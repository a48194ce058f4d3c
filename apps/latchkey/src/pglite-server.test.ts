import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { connect } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startupPacket, untilClosed } from "../testing/postgres-wire.ts";
import { OutputFilter, PgliteServer } from "./pglite-server.ts";

let db: PGlite;
let server: PgliteServer;
let url: string;
const dir = mkdtempSync(join(tmpdir(), "latchkey-pglite-server-"));

// Booting PGlite takes seconds when the whole suite runs beside it.
beforeAll(async () => {
  db = await PGlite.create();
  server = new PgliteServer(db);
  await server.listen(join(dir, ".s.PGSQL.5432"));
  url = `postgres://postgres@localhost/postgres?host=${encodeURIComponent(dir)}`;
}, 60_000);
afterAll(async () => {
  await server.close();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The type of each protocol message in a server's reply, in order. */
function messageTypes(reply: Buffer): string {
  let types = "";
  for (let at = 0; at + 5 <= reply.length; at += 1 + reply.readInt32BE(at + 1)) {
    types += String.fromCharCode(reply[at]!);
  }
  return types;
}

const query = (text: string) => {
  const body = Buffer.from(`${text}\0`);
  const head = Buffer.alloc(5);
  head.write("Q", 0, "latin1");
  head.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([head, body]);
};
const terminate = () => Buffer.from([0x58, 0, 0, 0, 4]);

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

  it("hands a committed NOTIFY to the connections that LISTEN, and not to the one that sent it", async () => {
    const listener = connect(url, { max: 1 });
    const notifier = connect(url, { max: 1 });
    const heard: string[] = [];
    await listener.listen("latchkey_test", (payload) => heard.push(payload));
    await notifier.notify("latchkey_test", "hello");
    await notifier.begin(async (tx) => {
      await tx`SELECT pg_notify('latchkey_test', 'committed')`;
    });
    await notifier
      .begin(async (tx) => {
        await tx`SELECT pg_notify('latchkey_test', 'rolled back')`;
        throw new Error("roll back");
      })
      .catch(() => {});
    await vi.waitFor(() => expect(heard).toEqual(["hello", "committed"]), { timeout: 5_000 });

    // The notifier listens to nothing: its reply carries no NotificationResponse ('A').
    const reply = await untilClosed(
      url,
      [startupPacket(), query("SELECT pg_notify('latchkey_test', 'raw')"), terminate()],
      5_000,
    );
    expect(messageTypes(reply)).not.toContain("A");
    expect(messageTypes(reply)).toContain("C");
    await vi.waitFor(() => expect(heard).toEqual(["hello", "committed", "raw"]), { timeout: 5_000 });
    await Promise.all([listener.end(), notifier.end()]);
  });

  it("closes a connection whose turn (messages up to a Sync) outgrows the bound, and serves the others", async () => {
    const small = new PgliteServer(db, { maxMessageBytes: 1024 });
    const smallDir = mkdtempSync(join(tmpdir(), "latchkey-pglite-small-"));
    await small.listen(join(smallDir, ".s.PGSQL.5432"));
    const smallUrl = `postgres://postgres@localhost/postgres?host=${encodeURIComponent(smallDir)}`;
    try {
      // 40 Parse messages of 100 bytes each and no Sync: 4 KB held for one turn.
      const parse = Buffer.concat([
        Buffer.from("P"),
        Buffer.alloc(4),
        Buffer.from(`\0${"x".repeat(93)}\0\0\0`),
      ]);
      parse.writeInt32BE(parse.length - 1, 1);
      const reply = await untilClosed(smallUrl, [startupPacket(), ...Array(40).fill(parse)], 3_000);
      expect(reply.toString("latin1")).toContain("08P01");
      const sql = connect(smallUrl, { max: 1 });
      expect((await sql`SELECT 4 AS four`)[0]!.four).toBe(4);
      await sql.end();
    } finally {
      await small.close();
      rmSync(smallDir, { recursive: true, force: true });
    }
  });
});

describe("OutputFilter", () => {
  const message = (type: string, body: string) => {
    const b = Buffer.alloc(5 + body.length);
    b.write(type, 0, "latin1");
    b.writeInt32BE(4 + body.length, 1);
    b.write(body, 5, "latin1");
    return b;
  };
  const notification = message("A", "\0\0\0\x07chan\0payload\0");
  const others = [message("2", ""), message("D", "row one"), message("C", "SELECT 1\0")];
  const ready = message("Z", "I");
  const output = Buffer.concat([...others, notification, message("N", "notice"), notification, ready]);
  const rest = Buffer.concat([...others, message("N", "notice"), ready]);

  it("takes every NotificationResponse out, wherever PGlite's chunks split the output", () => {
    const filter = new OutputFilter();
    // Every split into three chunks: through headers, bodies and message boundaries.
    for (let a = 0; a <= output.length; a++) {
      for (let b = a; b <= output.length; b++) {
        const sent: Buffer[] = [];
        const heard: Buffer[] = [];
        filter.reset();
        for (const chunk of [output.subarray(0, a), output.subarray(a, b), output.subarray(b)]) {
          filter.feed(
            new Uint8Array(chunk),
            (part) => sent.push(Buffer.from(part)),
            (n) => heard.push(n),
          );
        }
        expect(Buffer.concat(sent).equals(rest)).toBe(true);
        expect(heard).toEqual([notification, notification]);
      }
    }
  });
});
