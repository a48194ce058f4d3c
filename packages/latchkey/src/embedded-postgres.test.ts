import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@latchkey/runtime";
import { afterAll, describe, expect, it } from "vitest";
import { runningEmbedded, startEmbeddedPostgres } from "./embedded-postgres.ts";

const dir = mkdtempSync(join(tmpdir(), "latchkey-embedded-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const lost: Error[] = [];
const open = () => startEmbeddedPostgres(dir, (err) => lost.push(err));

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
