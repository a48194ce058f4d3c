import { fromBinary } from "@bufbuild/protobuf";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { DomainEventSchema } from "@latchkey/proto/common/v1/common_pb";
import { KeysService, RefillInterval } from "@latchkey/proto/keys/v1/keys_pb";
import {
  connect,
  createLogger,
  DOMAIN_EVENT_SUBJECT,
  MemoryBus,
  migrate,
  type Sql,
  type TestClock,
} from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { keepingEventSink } from "@latchkey/runtime/testing/event-sink";
import { afterAll, beforeAll } from "vitest";
import { createKeysDeps, creditSpendsSql, type KeysDeps } from "../src/deps.ts";
import { keysMigrations } from "../src/migrations.ts";
import { keysRoutes } from "../src/routes.ts";
import { callerOf } from "./in-memory-keys.ts";
import { inProcessServices } from "./keys-deps.ts";

/** The caller of every call: workspace ws_default, every permission. */
export const caller = callerOf("ws_default", "*");
/** When the tests' clocks start: noon, so a day's refill comes within the day after. */
export const START = Date.UTC(2026, 0, 1, 12);

/** A credits.* domain event one instance published, its data parsed. */
export interface CreditEvent {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

export interface CreditInstance {
  client: Client<typeof KeysService>;
  /** The credits.* events it has published so far, in order. */
  published(): CreditEvent[];
}

/**
 * Keys instances spending credits on one fresh PostgreSQL database (keys migrated), as processes do:
 * each with its own pipelined spend connection (creditSpendsSql), its bus in memory and the events
 * it publishes kept. Call at the top of a test file: it registers the beforeAll and afterAll that
 * create and drop the database and close every instance.
 */
export function creditInstancesOverDatabase(): {
  /**
   * An instance over the database's pool, or (`secondPool`) over a second one, as another
   * process's; `creditsLowFraction` as CREDITS_LOW_FRACTION.
   */
  instance(clock: TestClock, options?: { secondPool?: boolean; creditsLowFraction?: number }): CreditInstance;
} {
  let db: TestDatabase;
  let secondPool: Sql;
  const closers: (() => Promise<unknown>)[] = [];
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
  return {
    instance(clock, { secondPool: second = false, ...options } = {}) {
      const sql = second ? secondPool : db.sql;
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
    },
  };
}

/**
 * A key in an API of its own: `remaining` credits (none: unlimited), refilled by `daily` a day, with
 * its own thresholds (`own`) and its API's (`api`), none unless given.
 */
export async function keyWith(
  client: Client<typeof KeysService>,
  options: { remaining?: bigint; daily?: bigint; own?: number[]; api?: number[] },
) {
  const { apiId } = await client.createApi({ caller, name: "credits", creditThresholds: options.api ?? [] });
  const res = await client.createKey({
    caller,
    apiId,
    credits: {
      ...(options.remaining === undefined ? {} : { remaining: options.remaining }),
      ...(options.daily === undefined
        ? {}
        : { refill: { interval: RefillInterval.DAILY, amount: options.daily } }),
    },
    creditThresholds: options.own ?? [],
  });
  return { apiId, keyId: res.keyId, key: res.key };
}

/** `n` verifications of `key` at once, each costing `cost` (unset: 1), alternating between the instances. */
export function together(clients: Client<typeof KeysService>[], key: string, n: number, cost?: bigint) {
  return Promise.all(
    Array.from({ length: n }, (_, i) => clients[i % clients.length]!.verifyKey({ caller, key, cost })),
  ).then((answers) => answers.map((a) => a.code));
}
