import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { KeysService, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { connect, createLogger, MemoryBus, migrate, type Sql } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeysDeps, type KeysDeps } from "../deps.ts";
import { keysMigrations } from "../migrations.ts";
import { keysRoutes } from "../routes.ts";
import { callerOf } from "../test-kit.ts";

// Credits must be exact under concurrency across processes: proven here against real PostgreSQL.

const caller = callerOf("ws_default", "*");
let db: TestDatabase;
let secondPool: Sql;
const instances: { deps: KeysDeps; client: Client<typeof KeysService> }[] = [];

function instance(sql: Sql) {
  const deps = createKeysDeps({ sql, bus: new MemoryBus(), log: createLogger("keys", "silent") });
  const client = createClient(KeysService, createRouterTransport(keysRoutes(deps)));
  instances.push({ deps, client });
  return client;
}

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
  // A second pool stands for a second process: nothing is shared but the database.
  secondPool = connect(db.url, { max: 20 });
});
afterAll(async () => {
  for (const i of instances) i.deps.close();
  await secondPool?.end({ timeout: 5 });
  await db?.drop();
});

async function keyWithCredits(client: Client<typeof KeysService>, credits: number) {
  const { apiId } = await client.createApi({ caller, name: "credits" });
  return client.createKey({ caller, apiId, credits: { remaining: BigInt(credits) } });
}

const count = (codes: VerifyCode[], code: VerifyCode) => codes.filter((c) => c === code).length;

describe("verifyKey credits on PostgreSQL", () => {
  it("gives exactly 50 VALID and 150 USAGE_EXCEEDED for 200 concurrent verifications of 50 credits", async () => {
    const client = instance(db.sql);
    const { keyId, key } = await keyWithCredits(client, 50);
    const results = await Promise.all(Array.from({ length: 200 }, () => client.verifyKey({ caller, key })));
    const codes = results.map((r) => r.code);
    expect(count(codes, VerifyCode.VALID)).toBe(50);
    expect(count(codes, VerifyCode.USAGE_EXCEEDED)).toBe(150);
    // Every successful spend saw a distinct balance: 49 down to 0.
    const balances = results.filter((r) => r.valid).map((r) => Number(r.credits));
    expect(new Set(balances).size).toBe(50);
    expect(Math.min(...balances)).toBe(0);
    const { key: stored } = await client.getKey({ caller, keyId });
    expect(stored?.credits?.remaining).toBe(0n);
  });

  it("stays exact with two service instances on one database sharing the key", async () => {
    const a = instance(db.sql);
    const b = instance(secondPool);
    const { keyId, key } = await keyWithCredits(a, 50);
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).verifyKey({ caller, key })),
    );
    const codes = results.map((r) => r.code);
    expect(count(codes, VerifyCode.VALID)).toBe(50);
    expect(count(codes, VerifyCode.USAGE_EXCEEDED)).toBe(150);
    const { key: stored } = await b.getKey({ caller, keyId });
    expect(stored?.credits?.remaining).toBe(0n);
  });

  it("stays exact when the verifications arrive as batches on two instances", async () => {
    const a = instance(db.sql);
    const b = instance(secondPool);
    const { keyId, key } = await keyWithCredits(a, 50);
    const batch = {
      callers: [caller],
      items: Array.from({ length: 100 }, () => ({ callerIndex: 0, request: { key } })),
    };
    const [ra, rb] = await Promise.all([a.verifyKeyBatch(batch), b.verifyKeyBatch(batch)]);
    const codes = [...ra.results, ...rb.results].map((r) =>
      r.result.case === "response" ? r.result.value.code : VerifyCode.UNSPECIFIED,
    );
    expect(count(codes, VerifyCode.VALID)).toBe(50);
    expect(count(codes, VerifyCode.USAGE_EXCEEDED)).toBe(150);
    const { key: stored } = await a.getKey({ caller, keyId });
    expect(stored?.credits?.remaining).toBe(0n);
  });

  it("answers cost 0 as VALID at balance 0 and a too-high cost with the unchanged balance", async () => {
    const client = instance(db.sql);
    const { key } = await keyWithCredits(client, 3);
    expect(await client.verifyKey({ caller, key, cost: 5n })).toMatchObject({
      code: VerifyCode.USAGE_EXCEEDED,
      credits: 3n,
    });
    expect(await client.verifyKey({ caller, key, cost: 3n })).toMatchObject({
      code: VerifyCode.VALID,
      credits: 0n,
    });
    expect(await client.verifyKey({ caller, key, cost: 0n })).toMatchObject({
      code: VerifyCode.VALID,
      credits: 0n,
    });
  });
});
