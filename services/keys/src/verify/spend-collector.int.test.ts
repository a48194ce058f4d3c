import { createClient, createRouterTransport } from "@connectrpc/connect";
import { KeysService, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import {
  connect,
  createLogger,
  ErrorReason,
  errorDetailOf,
  loopProgress,
  MemoryBus,
  migrate,
  TestClock,
} from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf } from "../../testing/in-memory-keys.ts";
import { inProcessServices, keysDepsOverDatabase } from "../../testing/keys-deps.ts";
import { createKeysDeps, creditSpendsSql, type KeysDeps } from "../deps.ts";
import { keysMigrations } from "../migrations.ts";
import { keysRoutes } from "../routes.ts";
import type { Spend } from "../store/keys-store.ts";
import { PostgresKeysStore } from "../store/postgres-keys-store.ts";
import { MAX_QUEUED_SPENDS, SpendQueue } from "./spend-collector.ts";

let db: TestDatabase;
let deps: KeysDeps;

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
  deps = keysDepsOverDatabase(db.sql, new MemoryBus(), createLogger("keys", "silent"));
});
afterAll(async () => {
  await deps?.close();
  await db?.drop();
});

describe("SpendQueue on PostgreSQL", () => {
  it("decides statements pipelined two at a time on one connection in the order asked", async () => {
    const client = createClient(KeysService, createRouterTransport(keysRoutes(deps)));
    const caller = callerOf("ws_default", "*");
    const { apiId } = await client.createApi({ caller, name: "pipelined" });
    const { keyId } = await client.createKey({ caller, apiId, credits: { remaining: 100n } });
    const spendSql = creditSpendsSql(db.url, false);
    try {
      const queue = new SpendQueue(new PostgresKeysStore(spendSql), new TestClock(), 2);
      // Costs that change often: the queue behind the first two statements is cut into many,
      // all pipelined at once, each of which must see the balance the one before it left.
      const costs = Array.from({ length: 300 }, (_, i) => (i * 7) % 4);
      const answers = await Promise.all(costs.map((cost) => queue.spend("ws_default", keyId, cost)));
      const [{ period }] =
        (await db.sql`SELECT credits_given_at AS period FROM keys WHERE id = ${keyId}`) as unknown as [
          { period: number },
        ];
      let balance = 100;
      // The one spend that took the balance below 10 (10 % of the 100 given), the one that took it
      // to 0, and one refused with credits left (1, cost 2: each run here is one spend, so the first
      // of its run) say so, though each came in a statement of its own.
      const oneByOne = costs.map((cost) => {
        if (balance < cost && balance > 0) {
          return { spent: false, remaining: balance, crossed: { period, low: undefined, exhausted: true } };
        }
        // A spent balance carries its baseline and period (for a key's own thresholds).
        if (balance < cost)
          return cost === 0
            ? { spent: true, remaining: balance, baseline: 100, period }
            : { spent: false, remaining: balance };
        const before = balance;
        balance -= cost;
        const low = before >= 10 && balance < 10 ? 10 : undefined;
        const exhausted = cost > 0 && balance === 0;
        return low === undefined && !exhausted
          ? { spent: true, remaining: balance, baseline: 100, period }
          : { spent: true, remaining: balance, crossed: { period, low, exhausted }, baseline: 100, period };
      });
      expect(oneByOne.filter((a) => "crossed" in a)).toHaveLength(3);
      expect(answers).toEqual(oneByOne);
      expect(queue.statements).toBeGreaterThan(100);
      const { key } = await client.getKey({ caller, keyId });
      expect(key?.credits?.remaining).toBe(BigInt(balance));
    } finally {
      await spendSql.end({ timeout: 5 });
    }
  });

  it("saturated (20,000 spends of one workspace, a row held, the connection killed) keeps deciding, marks progress, and a 100-credit key of another verified 1,000 times at once spends exactly 100", async () => {
    const log = createLogger("keys", "silent");
    await db.sql`INSERT INTO workspaces (id, name, created_at)
      VALUES ('ws_attacker', 'attacker', 0), ('ws_victim', 'victim', 0) ON CONFLICT DO NOTHING`;
    const spendSql = creditSpendsSql(db.url, false);
    const lockSql = connect(db.url, { max: 1 });
    const bus = new MemoryBus();
    const d = createKeysDeps({
      sql: db.sql,
      spendSql,
      bus,
      log,
      ...inProcessServices({ sql: db.sql, bus, log }),
    });
    const client = createClient(KeysService, createRouterTransport(keysRoutes(d)));
    try {
      const attacker = callerOf("ws_attacker", "*");
      const { apiId } = await client.createApi({ caller: attacker, name: "flood" });
      const floodKeys: string[] = [];
      for (let i = 0; i < 50; i++) {
        floodKeys.push(
          (await client.createKey({ caller: attacker, apiId, credits: { remaining: 1_000_000n } })).keyId,
        );
      }
      const victim = callerOf("ws_victim", "*");
      const victimApi = await client.createApi({ caller: victim, name: "victim" });
      const { key, keyId } = await client.createKey({
        caller: victim,
        apiId: victimApi.apiId,
        credits: { remaining: 100n },
      });
      const progress = loopProgress("keys.credit-spends");
      const marksBefore = progress.marks;

      // PostgreSQL slow: another transaction holds one of the flood's rows, so its statements wait.
      let unlock = () => {};
      let locked = () => {};
      const held = new Promise<void>((r) => {
        locked = r;
      });
      const holding = lockSql.begin(async (tx) => {
        await tx`SELECT id FROM keys WHERE id = ${floodKeys[0]!} FOR UPDATE`;
        locked();
        await new Promise<void>((r) => {
          unlock = r;
        });
      });
      await held;
      // Costs that change with every round, so a key's spends take a statement each round.
      const cost = (i: number) => 1 + (Math.floor(i / 50) % 2);
      const flood = Array.from({ length: 20_000 }, (_, i) =>
        d.spends.spend("ws_attacker", floodKeys[i % 50]!, cost(i)),
      );
      // Watched from the start: the spends of the statements killed below fail meanwhile.
      const settled = Promise.allSettled(flood);
      // What the queue did not take was refused at once.
      const refused = (await Promise.allSettled(flood.slice(MAX_QUEUED_SPENDS + 2))).map((o) =>
        o.status === "rejected" ? errorDetailOf(o.reason)?.reason : "taken",
      );
      expect(refused.every((r) => r === ErrorReason.UNAVAILABLE)).toBe(true);
      // The statement out waits for the row: kill its connection.
      const deadline = Date.now() + 10_000;
      let killed = 0;
      while (killed === 0 && Date.now() < deadline) {
        const rows = await db.sql<{ pid: number }[]>`
          SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'`;
        killed = rows.length;
        if (killed === 0) await new Promise((r) => setTimeout(r, 20));
      }
      expect(killed).toBe(1);
      unlock();
      await holding;

      // The victim verifies its key 1,000 times at once while the flood drains.
      const codes = await Promise.all(
        Array.from({ length: 1_000 }, async () => (await client.verifyKey({ caller: victim, key })).code),
      );
      expect(codes.filter((c) => c === VerifyCode.VALID)).toHaveLength(100);
      expect(codes.filter((c) => c === VerifyCode.USAGE_EXCEEDED)).toHaveLength(900);
      const [row] = await db.sql<{ remaining: number }[]>`SELECT remaining FROM keys WHERE id = ${keyId}`;
      expect(Number(row!.remaining)).toBe(0);

      // Every spend of the flood was answered: the ones of the killed statements failed, the rest were decided.
      const outcomes = await settled;
      const decided = outcomes.filter(
        (o): o is PromiseFulfilledResult<Spend | undefined> => o.status === "fulfilled",
      );
      expect(decided.length).toBeGreaterThan(MAX_QUEUED_SPENDS - 200);
      expect(outcomes.length - decided.length).toBe(20_000 - MAX_QUEUED_SPENDS - 2 + killedSpends(outcomes));
      // Exact: each key lost what its decided spends were granted, no more.
      const granted = new Map<string, number>();
      outcomes.forEach((o, i) => {
        if (o.status === "fulfilled" && o.value?.spent) {
          const id = floodKeys[i % 50]!;
          granted.set(id, (granted.get(id) ?? 0) + cost(i));
        }
      });
      const balances = await db.sql<{ id: string; remaining: number }[]>`
        SELECT id, remaining FROM keys WHERE workspace_id = 'ws_attacker'`;
      for (const b of balances) expect(1_000_000 - Number(b.remaining)).toBe(granted.get(b.id) ?? 0);
      // Progress marked with every statement, the failed ones included.
      expect(progress.marks - marksBefore).toBeGreaterThanOrEqual(d.spends.statements);
      expect(d.spends.statements).toBeGreaterThan(200);
      expect(d.spends.waiting()).toBe(0);
    } finally {
      await d.close();
      await lockSql.end({ timeout: 5 });
      await spendSql.end({ timeout: 5 });
    }
  }, 60_000);
});

/** Spends that failed with something other than the queue's bound: those of the killed connection. */
function killedSpends(outcomes: PromiseSettledResult<unknown>[]): number {
  return outcomes.filter(
    (o) => o.status === "rejected" && errorDetailOf(o.reason)?.reason !== ErrorReason.UNAVAILABLE,
  ).length;
}
