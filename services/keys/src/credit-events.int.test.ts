import { fromBinary } from "@bufbuild/protobuf";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { DomainEventSchema } from "@latchkey/proto/common/v1/common_pb";
import { CreditsOperation, KeysService, RefillInterval, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import {
  connect,
  createLogger,
  DOMAIN_EVENT_SUBJECT,
  domainEventId,
  MemoryBus,
  migrate,
  type Sql,
  TestClock,
} from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { keepingEventSink } from "@latchkey/runtime/testing/event-sink";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf } from "../testing/in-memory-keys.ts";
import { inProcessServices } from "../testing/keys-deps.ts";
import { createKeysDeps, creditSpendsSql, type KeysDeps } from "./deps.ts";
import { keysMigrations } from "./migrations.ts";
import { keysRoutes } from "./routes.ts";

// credits.low and credits.exhausted against real PostgreSQL: two instances (two pools, each with its
// own pipelined spend connection, as two processes) spending one key at once.

const caller = callerOf("ws_default", "*");
const START = Date.UTC(2026, 0, 1, 12);
let db: TestDatabase;
let secondPool: Sql;
const closers: (() => Promise<unknown>)[] = [];

function instance(sql: Sql, clock: TestClock, options: { creditsLowFraction?: number } = {}) {
  const bus = new MemoryBus();
  const log = createLogger("keys", "silent");
  const sink = keepingEventSink();
  const spendSql = creditSpendsSql(db.url, false);
  const deps: KeysDeps = createKeysDeps({
    sql,
    bus,
    log,
    clock,
    events: sink,
    spendSql,
    ...inProcessServices({ sql, bus, log }),
    ...options,
  });
  closers.push(
    () => deps.close(),
    () => spendSql.end({ timeout: 5 }),
  );
  const client = createClient(KeysService, createRouterTransport(keysRoutes(deps)));
  const published = () =>
    sink.kept
      .filter((e) => e.subject === DOMAIN_EVENT_SUBJECT)
      .map((e) => {
        const event = fromBinary(DomainEventSchema, e.bytes);
        return {
          id: event.id,
          type: event.type,
          data: JSON.parse(event.dataJson) as Record<string, unknown>,
        };
      })
      .filter((e) => e.type.startsWith("credits."));
  return { client, published };
}

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "keys", keysMigrations);
  secondPool = connect(db.url, { max: 20 });
});
afterAll(async () => {
  for (const close of closers) await close();
  await secondPool?.end({ timeout: 5 });
  await db?.drop();
});

async function keyWith(client: Client<typeof KeysService>, credits: { remaining?: bigint; daily?: bigint }) {
  const { apiId } = await client.createApi({ caller, name: "credits" });
  const res = await client.createKey({
    caller,
    apiId,
    credits: {
      ...(credits.remaining === undefined ? {} : { remaining: credits.remaining }),
      ...(credits.daily === undefined
        ? {}
        : { refill: { interval: RefillInterval.DAILY, amount: credits.daily } }),
    },
  });
  return { apiId, keyId: res.keyId, key: res.key };
}

/** `n` verifications of `key` at once, alternating between the instances. */
function together(clients: Client<typeof KeysService>[], key: string, n: number) {
  return Promise.all(
    Array.from({ length: n }, (_, i) => clients[i % clients.length]!.verifyKey({ caller, key })),
  ).then((answers) => answers.map((a) => a.code));
}

describe("credits.low and credits.exhausted on PostgreSQL", () => {
  it("200 verifications at once on two instances of a key holding 100: one credits.low (remaining 9, threshold 10), one credits.exhausted", async () => {
    const clock = new TestClock(START);
    const a = instance(db.sql, clock);
    const b = instance(secondPool, clock);
    const { apiId, keyId, key } = await keyWith(a.client, { remaining: 100n });
    const codes = await together([a.client, b.client], key, 200);
    expect(codes.filter((c) => c === VerifyCode.VALID)).toHaveLength(100);
    const all = [...a.published(), ...b.published()];
    expect(all.filter((e) => e.type === "credits.low")).toEqual([
      {
        id: domainEventId("credits.low", "ws_default", keyId, START),
        type: "credits.low",
        data: { keyId, apiId, remaining: 9, threshold: 10, percent: 10 },
      },
    ]);
    expect(all.filter((e) => e.type === "credits.exhausted")).toEqual([
      {
        id: domainEventId("credits.exhausted", "ws_default", keyId, START),
        type: "credits.exhausted",
        data: { keyId, apiId, remaining: 0 },
      },
    ]);
  });

  it("gives a second crossing in the same period (after an increment, on another instance) the same id", async () => {
    const clock = new TestClock(START);
    const a = instance(db.sql, clock);
    const b = instance(secondPool, clock);
    const { keyId, key } = await keyWith(a.client, { remaining: 20n });
    await together([a.client], key, 19); // 20 → 1: below 2
    clock.advance(60_000);
    await a.client.updateCredits({ caller, keyId, operation: CreditsOperation.INCREMENT, value: 10n }); // 11
    await together([b.client], key, 10); // 11 → 1: below 2 again, on the instance that has not announced it
    const id = domainEventId("credits.low", "ws_default", keyId, START);
    expect(a.published().map((e) => [e.type, e.id])).toEqual([["credits.low", id]]);
    expect(b.published().map((e) => [e.type, e.id])).toEqual([["credits.low", id]]);
  });

  it("starts a new period with a refill: the next day's crossing has a new id", async () => {
    const clock = new TestClock(START);
    const a = instance(db.sql, clock);
    const { keyId, key } = await keyWith(a.client, { remaining: 100n, daily: 100n });
    await together([a.client], key, 91);
    clock.set(Date.UTC(2026, 0, 2, 8));
    await together([a.client], key, 91);
    expect(a.published().map((e) => [e.type, e.id, e.data["remaining"]])).toEqual([
      ["credits.low", domainEventId("credits.low", "ws_default", keyId, START), 9],
      ["credits.low", domainEventId("credits.low", "ws_default", keyId, Date.UTC(2026, 0, 2)), 9],
    ]);
  });

  it("announces nothing for a key without credits", async () => {
    const clock = new TestClock(START);
    const a = instance(db.sql, clock);
    const b = instance(secondPool, clock);
    const { key } = await keyWith(a.client, {});
    expect(await together([a.client, b.client], key, 100)).toEqual(Array(100).fill(VerifyCode.VALID));
    expect([...a.published(), ...b.published()]).toEqual([]);
  });

  it("with CREDITS_LOW_FRACTION 0 announces no credits.low, and credits.exhausted once", async () => {
    const clock = new TestClock(START);
    const a = instance(db.sql, clock, { creditsLowFraction: 0 });
    const b = instance(secondPool, clock, { creditsLowFraction: 0 });
    const { key } = await keyWith(a.client, { remaining: 30n });
    await together([a.client, b.client], key, 60);
    expect([...a.published(), ...b.published()].map((e) => e.type)).toEqual(["credits.exhausted"]);
  });

  it("migration 9 gives keys made before it their balance then as given, at their last update", async () => {
    const old = await createTestDatabase();
    try {
      await migrate(
        old.sql,
        "keys",
        keysMigrations.filter((m) => m.version < 9),
      );
      await old.sql`INSERT INTO apis (id, workspace_id, name, created_at) VALUES ('api_old', 'ws_default', 'old', 1)`;
      await old.sql`INSERT INTO keys (id, workspace_id, api_id, hash, start, created_at, updated_at, remaining)
        VALUES ('key_limited', 'ws_default', 'api_old', 'h1', 'lk_', 1000, 5000, 40),
          ('key_fresh', 'ws_default', 'api_old', 'h2', 'lk_', 2000, NULL, 7),
          ('key_unlimited', 'ws_default', 'api_old', 'h3', 'lk_', 3000, NULL, NULL)`;
      await migrate(old.sql, "keys", keysMigrations);
      expect(await old.sql`SELECT id, credits_given, credits_given_at FROM keys ORDER BY id`).toEqual([
        { id: "key_fresh", credits_given: 7, credits_given_at: 2000 },
        { id: "key_limited", credits_given: 40, credits_given_at: 5000 },
        { id: "key_unlimited", credits_given: null, credits_given_at: null },
      ]);
    } finally {
      await old.drop();
    }
  });
});
