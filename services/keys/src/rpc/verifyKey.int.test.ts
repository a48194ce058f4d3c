import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { CreditsOperation, KeysService, RefillInterval, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { connect, createLogger, MemoryBus, migrate, type Sql, TestClock } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf } from "../../testing/in-memory-keys.ts";
import { inProcessServices } from "../../testing/keys-deps.ts";
import { createKeysDeps, creditSpendsSql, type KeysDeps } from "../deps.ts";
import { keysMigrations } from "../migrations.ts";
import { applyDueRefills } from "../refills.ts";
import { keysRoutes } from "../routes.ts";

// Credits must be exact under concurrency across processes: proven here against real PostgreSQL.

const caller = callerOf("ws_default", "*");
let db: TestDatabase;
let secondPool: Sql;
const instances: { deps: KeysDeps; client: Client<typeof KeysService> }[] = [];

function instance(sql: Sql, clock?: TestClock, spendSql?: Sql) {
  const bus = new MemoryBus();
  const log = createLogger("keys", "silent");
  const deps = createKeysDeps({
    sql,
    bus,
    log,
    ...inProcessServices({ sql, bus, log }),
    ...(clock ? { clock } : {}),
    ...(spendSql ? { spendSql } : {}),
  });
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

/** 200 verifications of a key holding 50 credits, alternating between two instances: exactly 50 pass. */
async function expectExactAcross(a: Client<typeof KeysService>, b: Client<typeof KeysService>) {
  const { keyId, key } = await keyWithCredits(a, 50);
  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).verifyKey({ caller, key })),
  );
  const codes = results.map((r) => r.code);
  expect(count(codes, VerifyCode.VALID)).toBe(50);
  expect(count(codes, VerifyCode.USAGE_EXCEEDED)).toBe(150);
  const { key: stored } = await b.getKey({ caller, keyId });
  expect(stored?.credits?.remaining).toBe(0n);
}

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
    await expectExactAcross(instance(db.sql), instance(secondPool));
  });

  it("stays exact with CREDITS_ASYNC_COMMIT: spends on connections that do not wait for the disk", async () => {
    const durable = creditSpendsSql(db.url, false);
    const spendSql = creditSpendsSql(db.url, true);
    try {
      expect((await durable`SHOW synchronous_commit`)[0]?.["synchronous_commit"]).toBe("on");
      const [setting] = await spendSql`SHOW synchronous_commit`;
      expect(setting?.["synchronous_commit"]).toBe("off");
      // One instance commits asynchronously, the other as by default: the row lock orders both.
      await expectExactAcross(instance(db.sql, undefined, spendSql), instance(secondPool));
    } finally {
      await durable.end({ timeout: 5 });
      await spendSql.end({ timeout: 5 });
    }
  });

  it("stays exact with two instances each pipelining its spends on a connection of its own", async () => {
    const spendA = creditSpendsSql(db.url, false);
    const spendB = creditSpendsSql(db.url, false);
    try {
      await expectExactAcross(instance(db.sql, undefined, spendA), instance(secondPool, undefined, spendB));
    } finally {
      await spendA.end({ timeout: 5 });
      await spendB.end({ timeout: 5 });
    }
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

const DAY = 86_400_000;
const codesOf = (results: { result: { case: string | undefined; value?: unknown } }[]) =>
  results.map((r) =>
    r.result.case === "response" ? (r.result.value as { code: VerifyCode }).code : undefined,
  );

describe("updateCredits on PostgreSQL", () => {
  it("ends at 0, never below, after 100 concurrent decrements by 1 of a balance of 60", async () => {
    const client = instance(db.sql);
    const { keyId } = await keyWithCredits(client, 60);
    const results = await Promise.all(
      Array.from({ length: 100 }, () =>
        client.updateCredits({ caller, keyId, operation: CreditsOperation.DECREMENT, value: 1n }),
      ),
    );
    const balances = results.map((r) => Number(r.remaining));
    expect(Math.min(...balances)).toBe(0);
    expect(balances.filter((b) => b === 0)).toHaveLength(41);
    const { key } = await client.getKey({ caller, keyId });
    expect(key?.credits?.remaining).toBe(0n);
  });

  it("loses no spend and no increment when both race on one key", async () => {
    const a = instance(db.sql);
    const b = instance(secondPool);
    const { keyId, key } = await keyWithCredits(a, 100);
    const results = await Promise.all([
      ...Array.from({ length: 50 }, () => a.verifyKey({ caller, key })),
      ...Array.from({ length: 50 }, () =>
        b.updateCredits({ caller, keyId, operation: CreditsOperation.INCREMENT, value: 2n }),
      ),
    ]);
    expect(results.slice(0, 50).every((r) => "valid" in r && r.valid)).toBe(true);
    const { key: stored } = await a.getKey({ caller, keyId });
    expect(stored?.credits?.remaining).toBe(100n - 50n + 100n);
  });
});

describe("verifyKeyBatch credit spends on PostgreSQL", () => {
  it("hands the successes of a repeated key out in request order, other keys unaffected", async () => {
    const client = instance(db.sql);
    const three = await keyWithCredits(client, 3);
    const two = await keyWithCredits(client, 2);
    const open = await keyWithCredits(client, 0).then(async ({ keyId, key }) => {
      await client.updateCredits({ caller, keyId, operation: CreditsOperation.SET });
      return { key };
    });
    const keys = [three.key, two.key, three.key, open.key, three.key, two.key, three.key, two.key, three.key];
    const res = await client.verifyKeyBatch({
      callers: [caller],
      items: keys.map((key) => ({ callerIndex: 0, request: { key } })),
    });
    expect(codesOf(res.results)).toEqual([
      VerifyCode.VALID,
      VerifyCode.VALID,
      VerifyCode.VALID,
      VerifyCode.VALID,
      VerifyCode.VALID,
      VerifyCode.VALID,
      VerifyCode.USAGE_EXCEEDED,
      VerifyCode.USAGE_EXCEEDED,
      VerifyCode.USAGE_EXCEEDED,
    ]);
    const credits = res.results.map((r) =>
      r.result.case === "response" ? r.result.value.credits : undefined,
    );
    expect(credits).toEqual([2n, 1n, 1n, undefined, 0n, 0n, 0n, 0n, 0n]);
  });

  it("spends unequal costs on one key one by one in request order", async () => {
    const client = instance(db.sql);
    const { key, keyId } = await keyWithCredits(client, 5);
    const res = await client.verifyKeyBatch({
      callers: [caller],
      items: [3n, 3n, 2n, 1n].map((cost) => ({ callerIndex: 0, request: { key, cost } })),
    });
    expect(codesOf(res.results)).toEqual([
      VerifyCode.VALID,
      VerifyCode.USAGE_EXCEEDED,
      VerifyCode.VALID,
      VerifyCode.USAGE_EXCEEDED,
    ]);
    expect((await client.getKey({ caller, keyId })).key?.credits?.remaining).toBe(0n);
  });

  it("stays exact with concurrent batches of repeated keys on two instances", async () => {
    const a = instance(db.sql);
    const b = instance(secondPool);
    const k1 = await keyWithCredits(a, 40);
    const k2 = await keyWithCredits(a, 25);
    const batch = {
      callers: [caller],
      items: Array.from({ length: 60 }, (_, i) => ({
        callerIndex: 0,
        request: { key: i % 2 ? k1.key : k2.key },
      })),
    };
    const results = await Promise.all([
      a.verifyKeyBatch(batch),
      b.verifyKeyBatch(batch),
      a.verifyKeyBatch(batch),
    ]);
    const codes = results.flatMap((r) => codesOf(r.results));
    expect(codes.filter((c) => c === VerifyCode.VALID)).toHaveLength(65);
    expect(codes.filter((c) => c === VerifyCode.USAGE_EXCEEDED)).toHaveLength(180 - 65);
    expect((await a.getKey({ caller, keyId: k1.keyId })).key?.credits?.remaining).toBe(0n);
    expect((await a.getKey({ caller, keyId: k2.keyId })).key?.credits?.remaining).toBe(0n);
  });
});

describe("refills on PostgreSQL", () => {
  async function dailyKey(client: Client<typeof KeysService>, remaining: number, amount: number) {
    const { apiId } = await client.createApi({ caller, name: "refills" });
    return client.createKey({
      caller,
      apiId,
      credits: {
        remaining: BigInt(remaining),
        refill: { interval: RefillInterval.DAILY, amount: BigInt(amount) },
      },
    });
  }

  it("lets the first verification after midnight see the refilled balance before the job runs", async () => {
    const clock = new TestClock(Date.UTC(2026, 4, 10, 15));
    const client = instance(db.sql, clock);
    const { key, keyId } = await dailyKey(client, 1, 10);
    expect((await client.verifyKey({ caller, key })).credits).toBe(0n);
    expect((await client.verifyKey({ caller, key })).code).toBe(VerifyCode.USAGE_EXCEEDED);
    clock.set(Date.UTC(2026, 4, 11));
    expect(await client.verifyKey({ caller, key })).toMatchObject({ code: VerifyCode.VALID, credits: 9n });
    // The job, run afterwards for the same instant, does not refill again.
    await applyDueRefills(db.sql, Date.UTC(2026, 4, 11, 0, 1));
    expect((await client.getKey({ caller, keyId })).key?.credits?.remaining).toBe(9n);
  });

  it("refills exactly once when the job and 50 verifications race at the refill instant", async () => {
    const clock = new TestClock(Date.UTC(2026, 4, 10, 15));
    const client = instance(db.sql, clock);
    const { key, keyId } = await dailyKey(client, 0, 30);
    clock.set(Date.UTC(2026, 4, 11, 0, 0, 5));
    const [, ...results] = await Promise.all([
      applyDueRefills(secondPool, Date.UTC(2026, 4, 11, 0, 0, 5)),
      ...Array.from({ length: 50 }, () => client.verifyKey({ caller, key })),
      applyDueRefills(db.sql, Date.UTC(2026, 4, 11, 0, 0, 6)),
    ]);
    const codes = results
      .filter((r) => typeof r === "object" && r !== null && "code" in r)
      .map((r) => (r as { code: VerifyCode }).code);
    expect(codes.filter((c) => c === VerifyCode.VALID)).toHaveLength(30);
    expect(codes.filter((c) => c === VerifyCode.USAGE_EXCEEDED)).toHaveLength(20);
    expect((await client.getKey({ caller, keyId })).key?.credits?.remaining).toBe(0n);
  });

  it("applies a refill missed while down once, and answers how many keys it refilled", async () => {
    const clock = new TestClock(Date.UTC(2026, 0, 31, 10));
    const client = instance(db.sql, clock);
    const { apiId } = await client.createApi({ caller, name: "monthly" });
    const { keyId } = await client.createKey({
      caller,
      apiId,
      credits: { remaining: 3n, refill: { interval: RefillInterval.MONTHLY, amount: 100n, refillDay: 31 } },
    });
    const at = Date.UTC(2026, 3, 2);
    const first = await applyDueRefills(db.sql, at);
    expect(first.refilled).toBeGreaterThanOrEqual(1);
    await client.updateCredits({ caller, keyId, operation: CreditsOperation.DECREMENT, value: 40n });
    await applyDueRefills(db.sql, at + DAY);
    clock.set(at + DAY);
    expect((await client.getKey({ caller, keyId })).key?.credits?.remaining).toBe(60n);
    const [row] = await db.sql<
      { last_refill_at: number }[]
    >`SELECT last_refill_at FROM keys WHERE id = ${keyId}`;
    // Day 31 in March is the 31st; April 30 has not come yet.
    expect(row?.last_refill_at).toBe(Date.UTC(2026, 2, 31));
  });
});
