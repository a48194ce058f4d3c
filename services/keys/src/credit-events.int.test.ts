import { CreditsOperation, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { domainEventId, migrate, TestClock } from "@latchkey/runtime";
import { createTestDatabase } from "@latchkey/runtime/testing/database";
import { describe, expect, it } from "vitest";
import {
  caller,
  creditInstancesOverDatabase,
  keyWith,
  START,
  together,
} from "../testing/credit-instances.ts";
import { keysMigrations } from "./migrations.ts";

// credits.low and credits.exhausted against real PostgreSQL: two instances (two pools, each with its
// own pipelined spend connection, as two processes) spending one key at once.

const keys = creditInstancesOverDatabase();

describe("credits.low and credits.exhausted on PostgreSQL", () => {
  it("200 verifications at once on two instances of a key holding 100: one credits.low (remaining 9, threshold 10), one credits.exhausted", async () => {
    const clock = new TestClock(START);
    const a = keys.instance(clock);
    const b = keys.instance(clock, { secondPool: true });
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
    const a = keys.instance(clock);
    const b = keys.instance(clock, { secondPool: true });
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
    const a = keys.instance(clock);
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
    const a = keys.instance(clock);
    const b = keys.instance(clock, { secondPool: true });
    const { key } = await keyWith(a.client, {});
    expect(await together([a.client, b.client], key, 100)).toEqual(Array(100).fill(VerifyCode.VALID));
    expect([...a.published(), ...b.published()]).toEqual([]);
  });

  it("with CREDITS_LOW_FRACTION 0 announces no credits.low, and credits.exhausted once", async () => {
    const clock = new TestClock(START);
    const a = keys.instance(clock, { creditsLowFraction: 0 });
    const b = keys.instance(clock, { secondPool: true, creditsLowFraction: 0 });
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
