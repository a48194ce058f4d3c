import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { KeysService, RefillInterval } from "@latchkey/proto/keys/v1/keys_pb";
import { connect, createLogger, LoopProgress, MemoryBus, migrate, TestClock } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf, TEST_ENCRYPTION_KEY } from "../testing/in-memory-keys.ts";
import { inProcessServices } from "../testing/keys-deps.ts";
import { createKeysDeps, type KeysDeps } from "./deps.ts";
import { keysMigrations } from "./migrations.ts";
import { REFILLS_PER_STATEMENT, startRefills } from "./refills.ts";
import { keysRoutes } from "./routes.ts";

// Recoverable keys and the refill job against real PostgreSQL.

const caller = callerOf("ws_default", "*");
const log = createLogger("keys", "silent");
let db: TestDatabase;
const all: KeysDeps[] = [];

function instance(encryptionKey?: Buffer): Client<typeof KeysService> {
  const bus = new MemoryBus();
  const deps = createKeysDeps({
    sql: db.sql,
    bus,
    log,
    ...inProcessServices({ sql: db.sql, bus, log }),
    ...(encryptionKey ? { encryptionKey } : {}),
  });
  all.push(deps);
  return createClient(KeysService, createRouterTransport(keysRoutes(deps)));
}

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
});
afterAll(async () => {
  for (const d of all) d.close();
  await db?.drop();
});

describe("recoverable keys on PostgreSQL", () => {
  it("stores the sealed plaintext apart from the hash and opens it for decrypt", async () => {
    const client = instance(TEST_ENCRYPTION_KEY);
    const { apiId } = await client.createApi({ caller, name: "vault" });
    const { keyId, key } = await client.createKey({ caller, apiId, recoverable: true });
    const rows = await db.sql`SELECT * FROM encrypted_keys WHERE key_id = ${keyId}`;
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(key);
    const [keyRow] = await db.sql`SELECT * FROM keys WHERE id = ${keyId}`;
    expect(JSON.stringify(keyRow)).not.toContain(key);
    expect((await client.getKey({ caller, keyId, decrypt: true })).key?.plaintext).toBe(key);
  });

  it("cannot open a key sealed under another key-encryption key", async () => {
    const sealer = instance(TEST_ENCRYPTION_KEY);
    const { apiId } = await sealer.createApi({ caller, name: "vault" });
    const { keyId } = await sealer.createKey({ caller, apiId, recoverable: true });
    const other = instance(Buffer.alloc(32, 9));
    await expect(other.getKey({ caller, keyId, decrypt: true })).rejects.toThrow();
  });

  it("removes the sealed plaintext with a permanent deletion", async () => {
    const client = instance(TEST_ENCRYPTION_KEY);
    const { apiId } = await client.createApi({ caller, name: "vault" });
    const { keyId } = await client.createKey({ caller, apiId, recoverable: true });
    await client.deleteKey({ caller, keyId, permanent: true });
    expect(await db.sql`SELECT 1 FROM encrypted_keys WHERE key_id = ${keyId}`).toHaveLength(0);
  });
});

describe("the refill job", () => {
  it("runs on one instance at a time under an advisory lock", async () => {
    const client = instance();
    const { apiId } = await client.createApi({ caller, name: "job" });
    const clock = new TestClock(Date.now());
    // A key whose daily refill is due: its schedule started yesterday.
    const { keyId } = await client.createKey({
      caller,
      apiId,
      credits: { remaining: 0n, refill: { interval: RefillInterval.DAILY, amount: 5n } },
    });
    await db.sql`UPDATE keys SET created_at = created_at - 2 * 86400000 WHERE id = ${keyId}`;
    // Another session holds the lock: the job skips this round.
    const holder = await db.sql.reserve();
    await holder`SELECT pg_advisory_lock(hashtext('latchkey-keys-refill'))`;
    const stop = startRefills(db.sql, { clock, log, everyMs: 20 });
    await new Promise((r) => setTimeout(r, 150));
    expect((await db.sql`SELECT remaining FROM keys WHERE id = ${keyId}`)[0]?.["remaining"]).toBe(0);
    await holder`SELECT pg_advisory_unlock(hashtext('latchkey-keys-refill'))`;
    holder.release();
    await expect
      .poll(async () => (await db.sql`SELECT remaining FROM keys WHERE id = ${keyId}`)[0]?.["remaining"])
      .toBe(5);
    stop();
  });

  it("refills 2,500 due keys in statements of 1,000, each committed on its own, marking progress with each", async () => {
    const client = instance();
    const { apiId } = await client.createApi({ caller, name: "many due" });
    const { keyId } = await client.createKey({
      caller,
      apiId,
      credits: { remaining: 0n, refill: { interval: RefillInterval.DAILY, amount: 5n } },
    });
    await db.sql`UPDATE keys SET created_at = created_at - 2 * 86400000 WHERE id = ${keyId}`;
    // 2,499 more like it, in bulk.
    await db.sql`INSERT INTO keys (id, workspace_id, api_id, hash, start, remaining, refill_interval,
        refill_amount, created_at)
      SELECT 'key_bulk_' || lpad(g::text, 5, '0'), workspace_id, api_id, hash || g, start, 0, refill_interval,
        refill_amount, created_at
      FROM keys, generate_series(1, 2499) g WHERE id = ${keyId}`;
    const refilled = async () =>
      Number(
        (await db.sql`SELECT count(*)::int AS n FROM keys WHERE api_id = ${apiId} AND remaining = 5`)[0]?.[
          "n"
        ],
      );
    // Another transaction holds the last due key in id order: the job waits for it in its third statement.
    const [last] = await db.sql`SELECT max(id) AS id FROM keys WHERE api_id = ${apiId}`;
    const lockSql = connect(db.url, { max: 1 });
    let unlock = () => {};
    let locked = () => {};
    const held = new Promise<void>((r) => {
      locked = r;
    });
    const holding = lockSql.begin(async (tx) => {
      await tx`SELECT id FROM keys WHERE id = ${last?.["id"] as string} FOR UPDATE`;
      locked();
      await new Promise<void>((r) => {
        unlock = r;
      });
    });
    await held;
    const progress = new LoopProgress("test.refills");
    const stop = startRefills(db.sql, { clock: new TestClock(Date.now()), log, everyMs: 100, progress });
    try {
      // The first two statements are committed while the third waits: no key waits for all of them.
      await expect.poll(refilled, { timeout: 20_000 }).toBe(2 * REFILLS_PER_STATEMENT);
      expect(progress.marks).toBe(2);
      unlock();
      await holding;
      await expect.poll(refilled, { timeout: 20_000 }).toBe(2_500);
      // Then the runs after find nothing due and say so.
      await expect.poll(() => progress.marks, { timeout: 20_000 }).toBeGreaterThanOrEqual(4);
    } finally {
      stop();
      unlock();
      await lockSql.end({ timeout: 5 });
    }
  });
});
