import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listeningTcpPorts, socketOf, startupPacket, untilClosed } from "../testing/postgres-wire.ts";
import { type EmbeddedPostgres, runningEmbedded, startEmbeddedPostgres } from "./embedded-postgres.ts";

const dir = mkdtempSync(join(tmpdir(), "latchkey-embedded-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const lost: Error[] = [];
const open = (at = dir) => startEmbeddedPostgres(at, (err) => lost.push(err));
const mode = (path: string) => statSync(path).mode & 0o777;

// Each test boots PGlite's WASM PostgreSQL, the first twice: a second or two alone, and
// well past vitest's default 5 s when the whole suite runs beside it (CI timed out here).
describe("embedded PostgreSQL on its own thread", { timeout: 60_000 }, () => {
  it("serves the wire protocol, holds the directory while open and keeps its data across a restart", async () => {
    const first = await open();
    expect(runningEmbedded(dir)?.url).toBe(first.url);
    await expect(open()).rejects.toThrow(/already running on/);
    const sql = connect(first.url, { max: 4 });
    await sql`CREATE TABLE kept (n int)`;
    await Promise.all([1, 2, 3].map((n) => sql`INSERT INTO kept VALUES (${n})`));
    await sql.end();
    await first.close();
    expect(runningEmbedded(dir)).toBeUndefined();

    const second = await open();
    const again = connect(second.url, { max: 1 });
    expect((await again`SELECT sum(n)::int AS total FROM kept`)[0]!.total).toBe(6);
    await again.end();
    await second.close();
    // Closing is not losing: the thread ended because it was asked to.
    expect(lost).toEqual([]);
  });

  it("listens on a Unix socket in the data directory that only its owner can open, and on no TCP port", async () => {
    // A directory others may enter: the start makes it private.
    const open755 = join(dir, "shared");
    mkdirSync(open755, { mode: 0o755 });
    const tcpBefore = listeningTcpPorts(process.pid);
    const db = await open(open755);
    const socket = socketOf(db.url);
    try {
      expect(socket).toEqual({ path: join(open755, ".s.PGSQL.5432") });
      expect(mode(open755)).toBe(0o700);
      expect(mode(join(open755, ".s.PGSQL.5432"))).toBe(0o600);
      expect(listeningTcpPorts(process.pid)).toEqual(tcpBefore);
      const sql = connect(db.url, { max: 1 });
      expect((await sql`SELECT 1 AS one`)[0]!.one).toBe(1);
      await sql.end();
    } finally {
      await db.close();
    }
    expect(existsSync(join(open755, ".s.PGSQL.5432"))).toBe(false);
  });

  it("puts the socket in a private temporary directory when the data directory's path is too long for one", async () => {
    // A Unix socket's path has at most 107 bytes (103 on macOS).
    const deep = join(dir, "d".repeat(120));
    const db = await open(deep);
    const socket = socketOf(db.url) as { path: string };
    try {
      expect(socket.path.startsWith(tmpdir())).toBe(true);
      expect(mode(join(socket.path, ".."))).toBe(0o700);
      expect(mode(socket.path)).toBe(0o600);
      const sql = connect(db.url, { max: 1 });
      expect((await sql`SELECT 2 AS two`)[0]!.two).toBe(2);
      await sql.end();
    } finally {
      await db.close();
    }
    expect(existsSync(join(socket.path, ".."))).toBe(false);
  });

  it("answers why it could not start, and leaves no lockfile behind", async () => {
    const broken = join(dir, "broken");
    mkdirSync(broken);
    // The database's directory is a file: PGlite cannot open it.
    writeFileSync(join(broken, "pgdata"), "not a directory");
    await expect(startEmbeddedPostgres(broken, (err) => lost.push(err))).rejects.toThrow(
      /^embedded PostgreSQL: /,
    );
    expect(runningEmbedded(broken)).toBeUndefined();
    expect(lost).toEqual([]);
  });
});

/** A message header: its type byte and a length (which counts itself, not the type). */
const header = (type: string, length: number) => {
  const b = Buffer.alloc(5);
  b.write(type, 0, "latin1");
  b.writeUInt32BE(length, 1);
  return b;
};
const startupHeader = (length: number) => {
  const b = Buffer.alloc(8);
  b.writeUInt32BE(length, 0);
  b.writeInt32BE(196608, 4);
  return b;
};

describe("embedded PostgreSQL refuses a message longer than it accepts", { timeout: 60_000 }, () => {
  let db: EmbeddedPostgres;
  const bounded = join(dir, "bounded");
  beforeAll(async () => {
    db = await open(bounded);
  }, 60_000);
  afterAll(async () => {
    await db?.close();
  });

  // Each is answered with a protocol_violation (SQLSTATE 08P01) and closed at once, without
  // waiting for (or buffering) the announced bytes; the server serves the next client.
  it.each([
    ["a startup packet of length 0xFFFFFFFF", [startupHeader(0xffffffff)]],
    ["a startup packet over 10 KiB", [startupHeader(10 * 1024 + 1)]],
    ["a startup packet shorter than its header", [startupHeader(4)]],
    ["a query of length 0xFFFFFFFF", [startupPacket(), header("Q", 0xffffffff)]],
    ["a query over 64 MiB", [startupPacket(), header("Q", 64 * 1024 * 1024 + 1)]],
    ["a message shorter than its length field", [startupPacket(), header("Q", 3)]],
  ])("%s", async (_name, bytes) => {
    const reply = await untilClosed(db.url, bytes, 3_000);
    expect(reply.toString("latin1")).toContain("08P01");
    const sql = connect(db.url, { max: 1 });
    expect((await sql`SELECT 3 AS three`)[0]!.three).toBe(3);
    await sql.end();
  });
});
