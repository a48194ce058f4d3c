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
      const answers = await Promise.all(costs.map((cost) => queue.spend(keyId, cost)));
      let balance = 100;
      const oneByOne = costs.map((cost) => {
        if (balance < cost) return { spent: cost === 0, remaining: balance };
        balance -= cost;
        return { spent: true, remaining: balance };
      });
      expect(answers).toEqual(oneByOne);
      expect(queue.statements).toBeGreaterThan(100);
      const { key } = await client.getKey({ caller, keyId });
      expect(key?.credits?.remaining).toBe(BigInt(balance));
    } finally {
      await spendSql.end({ timeout: 5 });
    }
  });
});
