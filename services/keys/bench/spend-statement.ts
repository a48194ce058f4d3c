import { readFileSync } from "node:fs";
import { connect, migrate, type Sql } from "@latchkey/runtime";
import { createTestDatabase } from "@latchkey/runtime/testing/database";
import { keysMigrations } from "../src/migrations.ts";
import { PostgresKeysStore } from "../src/store/postgres-keys-store.ts";

/**
 * What one credit-spend statement costs PostgreSQL: the statement
 * spendCreditsGroups runs (a group of SPENDS spends of one key, or KEYS keys
 * of one spend each), run STATEMENTS times one after another on one
 * connection, beside a bare one-row UPDATE and a SELECT 1 on the same
 * connection as floors; each with synchronous_commit on (the default) and
 * off. Prints, per statement, the CPU of the connection's backend and of the
 * WAL writer (from /proc) and the wall time, the fastest of ROUNDS (3) rounds.
 * The table holds TABLE_KEYS (100,000) other keys.
 *   npx tsx services/keys/bench/spend-statement.ts
 */
const STATEMENTS = Number(process.env["STATEMENTS"] ?? 2_000);
const SPENDS = Number(process.env["SPENDS"] ?? 20);
const KEYS = Number(process.env["KEYS"] ?? 20);
const ROUNDS = Number(process.env["ROUNDS"] ?? 3);
const TABLE_KEYS = Number(process.env["TABLE_KEYS"] ?? 100_000);

function cpuMicros(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return 0;
  }
}

async function walWriter(sql: Sql): Promise<number | undefined> {
  const [row] = await sql<
    { pid: number }[]
  >`SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'`;
  return row?.pid;
}

async function main() {
  const db = await createTestDatabase();
  try {
    await migrate(db.sql, "keys", keysMigrations);
    const now = Date.now();
    await db.sql`INSERT INTO apis (id, workspace_id, name, created_at) VALUES ('api_b', 'ws_default', 'b', ${now})`;
    await db.sql`INSERT INTO keys (id, workspace_id, api_id, hash, start, created_at)
      SELECT 'key_t' || i, 'ws_default', 'api_b', 'h' || i, 's', ${now} FROM generate_series(1, ${TABLE_KEYS}) AS i`;
    await db.sql`INSERT INTO keys (id, workspace_id, api_id, hash, start, created_at, remaining, credits_given, credits_given_at)
      SELECT 'key_s' || i, 'ws_default', 'api_b', 'hs' || i, 's', ${now}, 1e15, 1e15, ${now} FROM generate_series(1, ${KEYS}) AS i`;
    await db.sql`ANALYZE keys`;
    const cases: [string, (sql: Sql, store: PostgresKeysStore) => Promise<unknown>][] = [
      ["SELECT 1", (sql) => sql`SELECT 1`],
      ["UPDATE one row", (sql) => sql`UPDATE keys SET remaining = remaining - 1 WHERE id = 'key_s1'`],
      [
        `spend: one key, ${SPENDS} spends`,
        (_, s) => s.spendCreditsGroups([{ keyId: "key_s1", cost: 1, count: SPENDS }], Date.now()),
      ],
      [
        `spend: ${KEYS} keys, 1 spend each`,
        (_, s) =>
          s.spendCreditsGroups(
            Array.from({ length: KEYS }, (_, i) => ({ keyId: `key_s${i + 1}`, cost: 1, count: 1 })),
            Date.now(),
          ),
      ],
    ];
    for (const commit of ["on", "off"]) {
      const sql = connect(db.url, { max: 1, settings: { synchronous_commit: commit } });
      const store = new PostgresKeysStore(sql);
      const [{ pid }] = (await sql`SELECT pg_backend_pid() AS pid`) as unknown as [{ pid: number }];
      const wal = await walWriter(sql);
      for (const [name, run] of cases) {
        let best = { backend: Infinity, wal: 0, wall: 0 };
        for (let r = 0; r < ROUNDS; r++) {
          for (let i = 0; i < 50; i++) await run(sql, store);
          const b0 = cpuMicros(pid);
          const w0 = wal === undefined ? 0 : cpuMicros(wal);
          const t0 = performance.now();
          for (let i = 0; i < STATEMENTS; i++) await run(sql, store);
          const wall = ((performance.now() - t0) * 1000) / STATEMENTS;
          const backend = (cpuMicros(pid) - b0) / STATEMENTS;
          const walCpu = wal === undefined ? 0 : (cpuMicros(wal) - w0) / STATEMENTS;
          if (backend < best.backend) best = { backend, wal: walCpu, wall };
        }
        process.stdout.write(
          `synchronous_commit ${commit.padEnd(3)} | ${name.padEnd(28)} | backend ${best.backend.toFixed(0).padStart(4)} µs | walwriter ${best.wal.toFixed(0).padStart(3)} µs | wall ${best.wall.toFixed(0).padStart(5)} µs\n`,
        );
      }
      await sql.end();
    }
  } finally {
    await db.drop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
