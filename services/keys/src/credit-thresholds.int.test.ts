import { Code, ConnectError } from "@connectrpc/connect";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { domainEventId, TestClock } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import {
  type CreditEvent,
  caller,
  creditInstancesOverDatabase,
  keyWith,
  START,
  together,
} from "../testing/credit-instances.ts";

// A key's own credit thresholds (credit-thresholds.ts) against real PostgreSQL: two instances (two
// pools, each with its own pipelined spend connection, as two processes) spending one key at once.

const keys = creditInstancesOverDatabase();

const lows = (events: CreditEvent[]) =>
  events
    .filter((e) => e.type === "credits.low")
    .map((e) => [e.data["percent"], e.data["threshold"], e.data["remaining"]]);

describe("credit thresholds per key on PostgreSQL", () => {
  it("one spend across 50 % and 20 % announces each once; the spend to 0 announces 0 % and credits.exhausted", async () => {
    const clock = new TestClock(START);
    const a = keys.instance(clock);
    const { apiId, keyId, key } = await keyWith(a.client, { remaining: 100n, own: [20, 0, 50] });
    expect((await a.client.getKey({ caller, keyId })).key?.creditThresholds).toEqual([50, 20, 0]);
    await together([a.client], key, 1, 10n); // 90: nothing crossed
    expect(a.published()).toEqual([]);
    await together([a.client], key, 1, 75n); // 15: to 50 and 20 or below in one spend
    await together([a.client], key, 1, 5n); // 10: nothing new
    await together([a.client], key, 1, 10n); // 0
    expect(await together([a.client], key, 3, 1n)).toEqual(Array(3).fill(VerifyCode.USAGE_EXCEEDED));
    const events = a.published();
    expect(events.filter((e) => e.type === "credits.low")).toEqual([
      {
        id: domainEventId("credits.low", "ws_default", keyId, START, "50%"),
        type: "credits.low",
        data: { keyId, apiId, remaining: 15, threshold: 50, percent: 50 },
      },
      {
        id: domainEventId("credits.low", "ws_default", keyId, START, "20%"),
        type: "credits.low",
        data: { keyId, apiId, remaining: 15, threshold: 20, percent: 20 },
      },
      {
        id: domainEventId("credits.low", "ws_default", keyId, START, "0%"),
        type: "credits.low",
        data: { keyId, apiId, remaining: 0, threshold: 0, percent: 0 },
      },
    ]);
    expect(events.filter((e) => e.type === "credits.exhausted").map((e) => e.data["remaining"])).toEqual([0]);
  });

  it("a balance landing exactly on a threshold announces it (to it or below), and CREDITS_LOW_FRACTION's 10 % is not announced", async () => {
    const clock = new TestClock(START);
    const a = keys.instance(clock);
    const { key } = await keyWith(a.client, { remaining: 40n, own: [25] });
    await together([a.client], key, 30); // 40 → 10: crosses 25 % (10 credits) exactly at the 30th
    expect(lows(a.published())).toEqual([[25, 10, 10]]);
    await together([a.client], key, 6); // 4: below CREDITS_LOW_FRACTION's 10 % of 40, not one of the key's
    expect(lows(a.published())).toEqual([[25, 10, 10]]);
  });

  it("keys without their own take their API's; updateKey [] returns a key to them", async () => {
    const clock = new TestClock(START);
    const a = keys.instance(clock);
    const { apiId, keyId, key } = await keyWith(a.client, { remaining: 10n, api: [60] });
    expect((await a.client.getApi({ caller, apiId })).api?.creditThresholds).toEqual([60]);
    expect((await a.client.getKey({ caller, keyId })).key?.creditThresholds).toEqual([]);
    await together([a.client], key, 5); // 10 → 5: to 60 % (6) or below at the 4th
    expect(lows(a.published())).toEqual([[60, 6, 6]]);

    const own = await a.client.createKey({
      caller,
      apiId,
      credits: { remaining: 10n },
      creditThresholds: [90],
    });
    await a.client.updateKey({ caller, keyId: own.keyId, creditThresholds: { values: [30] } });
    expect((await a.client.getKey({ caller, keyId: own.keyId })).key?.creditThresholds).toEqual([30]);
    await together([a.client], own.key, 1); // 9: to 90 % (9), no longer the key's (its cached record was dropped)
    await a.client.updateKey({ caller, keyId: own.keyId, creditThresholds: { values: [] } });
    expect((await a.client.getKey({ caller, keyId: own.keyId })).key?.creditThresholds).toEqual([]);
    await together([a.client], own.key, 4); // 9 → 5: the API's 60 % (6) again, at the 3rd
    expect(lows(a.published())).toEqual([
      [60, 6, 6],
      [60, 6, 6],
    ]);
  });

  it("apis.updateApi's new thresholds apply at once to the API's keys without their own, cached ones too; [] returns them to CREDITS_LOW_FRACTION", async () => {
    const clock = new TestClock(START);
    const a = keys.instance(clock);
    const { apiId, keyId, key } = await keyWith(a.client, { remaining: 100n });
    const own = await a.client.createKey({
      caller,
      apiId,
      credits: { remaining: 100n },
      creditThresholds: [90],
    });
    // Verified once each, so that both are in the instance's cache with the thresholds then in effect.
    await together([a.client], key, 1); // 99
    await together([a.client], own.key, 1); // 99

    const updated = await a.client.updateApi({ caller, apiId, creditThresholds: { values: [50, 80, 80] } });
    expect(updated.api?.creditThresholds).toEqual([80, 50]);
    expect((await a.client.getApi({ caller, apiId })).api?.creditThresholds).toEqual([80, 50]);
    expect((await a.client.getKey({ caller, keyId })).key?.creditThresholds).toEqual([]);
    await together([a.client], key, 19); // 99 → 80: to the API's new 80 % at the 19th
    await together([a.client], own.key, 19); // 99 → 80: its own 90 % at the 9th, never the API's 80 %
    expect(lows(a.published())).toEqual([
      [80, 80, 80],
      [90, 90, 90],
    ]);
    await together([a.client], key, 30); // 80 → 50: the API's 50 %
    expect(lows(a.published()).at(-1)).toEqual([50, 50, 50]);

    // None of the API's own again: the key is back to CREDITS_LOW_FRACTION's 10 % (below 10 of 100).
    const cleared = await a.client.updateApi({ caller, apiId, creditThresholds: { values: [] } });
    expect(cleared.api?.creditThresholds).toEqual([]);
    await together([a.client], key, 45); // 50 → 5: below 10 credits at 9
    const events = a.published().filter((e) => e.type === "credits.low");
    expect(events.length).toBe(4);
    expect(events.at(-1)?.data).toMatchObject({ keyId, apiId, remaining: 9, threshold: 10 });
    expect(events.at(-1)?.id).toBe(domainEventId("credits.low", "ws_default", keyId, START));
  });

  it("a refill starts a new period: each threshold is announced again, under a new id", async () => {
    const clock = new TestClock(START);
    const a = keys.instance(clock);
    const { keyId, key } = await keyWith(a.client, { remaining: 10n, daily: 10n, own: [50, 20] });
    await together([a.client], key, 9);
    clock.set(Date.UTC(2026, 0, 2, 8));
    await together([a.client], key, 9);
    const day2 = Date.UTC(2026, 0, 2);
    expect(a.published().map((e) => [e.type, e.id, e.data["remaining"]])).toEqual([
      ["credits.low", domainEventId("credits.low", "ws_default", keyId, START, "50%"), 5],
      ["credits.low", domainEventId("credits.low", "ws_default", keyId, START, "20%"), 2],
      ["credits.low", domainEventId("credits.low", "ws_default", keyId, day2, "50%"), 5],
      ["credits.low", domainEventId("credits.low", "ws_default", keyId, day2, "20%"), 2],
    ]);
  });

  it("400 verifications at once on two instances of a key holding 200: each threshold announced once in all", async () => {
    const clock = new TestClock(START);
    const a = keys.instance(clock);
    const b = keys.instance(clock, { secondPool: true });
    const { keyId, key } = await keyWith(a.client, { remaining: 200n, own: [75, 50, 25, 10, 0] });
    const codes = await together([a.client, b.client], key, 400);
    expect(codes.filter((c) => c === VerifyCode.VALID)).toHaveLength(200);
    const all = [...a.published(), ...b.published()];
    expect(
      all
        .filter((e) => e.type === "credits.low")
        .map((e) => [e.id, e.data["remaining"]])
        .sort(),
    ).toEqual(
      [
        [domainEventId("credits.low", "ws_default", keyId, START, "75%"), 150],
        [domainEventId("credits.low", "ws_default", keyId, START, "50%"), 100],
        [domainEventId("credits.low", "ws_default", keyId, START, "25%"), 50],
        [domainEventId("credits.low", "ws_default", keyId, START, "10%"), 20],
        [domainEventId("credits.low", "ws_default", keyId, START, "0%"), 0],
      ].sort(),
    );
    expect(all.filter((e) => e.type === "credits.exhausted")).toHaveLength(1);
  });

  it("refuses more than 10 thresholds, or one outside 0 to 100, saying which", async () => {
    const clock = new TestClock(START);
    const a = keys.instance(clock);
    const { apiId, keyId } = await keyWith(a.client, { remaining: 10n });
    const refused = async (call: Promise<unknown>) => {
      const err = await call.then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      return err && [err.code, err.rawMessage];
    };
    expect(
      await refused(
        a.client.createKey({ caller, apiId, creditThresholds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] }),
      ),
    ).toEqual([Code.InvalidArgument, expect.stringContaining("at most 10")]);
    expect(await refused(a.client.createApi({ caller, name: "bad", creditThresholds: [50, 101] }))).toEqual([
      Code.InvalidArgument,
      expect.stringContaining("0 to 100"),
    ]);
    expect(await refused(a.client.updateKey({ caller, keyId, creditThresholds: { values: [-1] } }))).toEqual([
      Code.InvalidArgument,
      expect.stringContaining("0 to 100"),
    ]);
    expect(
      await refused(
        a.client.updateApi({
          caller,
          apiId,
          creditThresholds: { values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] },
        }),
      ),
    ).toEqual([Code.InvalidArgument, expect.stringContaining("at most 10")]);
    expect(
      await refused(a.client.updateApi({ caller, apiId, creditThresholds: { values: [50, 101] } })),
    ).toEqual([Code.InvalidArgument, expect.stringContaining("0 to 100")]);
    expect((await a.client.getKey({ caller, keyId })).key?.creditThresholds).toEqual([]);
    expect((await a.client.getApi({ caller, apiId })).api?.creditThresholds).toEqual([]);
  });
});
