import { createClient, createRouterTransport } from "@connectrpc/connect";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { createLogger, MemoryBus, migrate, TestClock } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { creditSpendsSql, type KeysDeps } from "../deps.ts";
import { keysDepsOverDatabase } from "../deps-test-kit.ts";
import { keysMigrations } from "../migrations.ts";
import { keysRoutes } from "../routes.ts";
import { PostgresKeysStore } from "../store/postgres-keys-store.ts";
import { callerOf } from "../test-kit.ts";
import { SpendQueue } from "./spend-collector.ts";

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
        if (balance < cost) return { spent: cost === 0, remaining: balance };
        const before = balance;
        balance -= cost;
        const low = before >= 10 && balance < 10 ? 10 : undefined;
        const exhausted = cost > 0 && balance === 0;
        return low === undefined && !exhausted
          ? { spent: true, remaining: balance }
          : { spent: true, remaining: balance, crossed: { period, low, exhausted } };
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
});
