import { createHash } from "node:crypto";
import type { Sql } from "@latchkey/runtime";
import type { Call } from "./load.ts";

/** Inserted per statement: one generate_series chunk, hashed by PostgreSQL. */
const CHUNK = 100_000;

/** The plaintext of seeded key i. */
export const seededKey = (i: number) => `bench_${i}`;

/**
 * Keys i in [from, to) of one API of ws_default, straight into the keys
 * service's table: the key string is seededKey(i) and its hash is computed by
 * PostgreSQL exactly as hashKey does (standard base64 of SHA-256; 44
 * characters, so encode adds no line break). Unlimited, enabled, no limits or
 * roles: the plain verification.
 */
export async function seedKeys(sql: Sql, apiId: string, from: number, to: number): Promise<void> {
  const now = Date.now();
  const chunks: number[] = [];
  for (let start = from; start < to; start += CHUNK) chunks.push(start);
  // Two chunks at a time, on two connections: hashing and index upkeep use both cores of PostgreSQL.
  const worker = async () => {
    for (let start = chunks.shift(); start !== undefined; start = chunks.shift()) {
      const end = Math.min(to, start + CHUNK) - 1;
      await sql`INSERT INTO keys (id, workspace_id, api_id, hash, start, created_at)
        SELECT 'key_bench_' || i, 'ws_default', ${apiId},
          encode(sha256(convert_to('bench_' || i, 'UTF8')), 'base64'), 'bench_', ${now}
        FROM generate_series(${start}::int, ${end}::int) AS i`;
    }
  };
  await Promise.all([worker(), worker()]);
  await sql`ANALYZE keys`;
}

/**
 * Keys in the table beside the ones a throughput target verifies (TABLE_KEYS,
 * default 100,000), so PostgreSQL plans and looks up as it would in a
 * deployment rather than on the few rows of a fresh database: a spend
 * statement whose plan depended on the table's size cost three times as much
 * on 10^5 keys as on an empty table, which a bench on an empty table hid.
 */
export const TABLE_KEYS = Number(process.env["TABLE_KEYS"] ?? 100_000);

/** keys.migrateKeys takes at most this many keys per request. */
const MIGRATE_BATCH = 1_000;

/**
 * TABLE_KEYS keys under an API of their own, created through `call`: in bulk
 * through `sql` when the bench can reach the database, otherwise (the
 * embedded PGlite, inside `npm start`) through keys.migrateKeys, a thousand
 * hashes a request (about 0.4 s each there).
 */
export async function fillTable(call: Call, sql?: Sql): Promise<void> {
  if (TABLE_KEYS <= 0) return;
  const apiId = (await call("apis.createApi", { name: "table" })).body.data.apiId as string;
  if (sql) return seedKeys(sql, apiId, 0, TABLE_KEYS);
  for (let from = 0; from < TABLE_KEYS; from += MIGRATE_BATCH) {
    const keys = [];
    for (let i = from; i < Math.min(TABLE_KEYS, from + MIGRATE_BATCH); i++) {
      keys.push({ hash: createHash("sha256").update(seededKey(i)).digest("base64") });
    }
    const res = await call("keys.migrateKeys", { migrationId: "bench-table", apiId, keys });
    if (res.status !== 200) throw new Error(`could not fill the table: ${JSON.stringify(res.body)}`);
  }
}
