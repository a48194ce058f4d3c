import { fromBinary } from "@bufbuild/protobuf";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { DomainEventSchema } from "@latchkey/proto/common/v1/common_pb";
import { CreditsOperation, KeysService, RefillInterval, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { DOMAIN_EVENT_SUBJECT, domainEventId, TestClock } from "@latchkey/runtime";
import { callerOf } from "@latchkey/runtime/testing/caller";
import { keepingEventSink } from "@latchkey/runtime/testing/event-sink";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryKeysDeps } from "../testing/keys-deps.ts";
import { CreditEvents, creditsLowFractionFromEnv, lowThreshold } from "./credit-events.ts";
import { keysRoutes } from "./routes.ts";

const caller = callerOf("ws_1", "*");
const DAY = 86_400_000;
const START = Date.UTC(2026, 0, 1, 12);

function service(options: { creditsLowFraction?: number } = {}) {
  const sink = keepingEventSink();
  const clock = new TestClock(START);
  const deps = createMemoryKeysDeps({ clock, events: sink, ...options });
  const client: Client<typeof KeysService> = createClient(
    KeysService,
    createRouterTransport(keysRoutes(deps)),
  );
  /** The credit events published so far (key.* events are another test's), decoded, with their data parsed. */
  const published = () =>
    sink.kept
      .filter((e) => e.subject === DOMAIN_EVENT_SUBJECT)
      .map((e) => {
        const event = fromBinary(DomainEventSchema, e.bytes);
        expect(event.id).toBe(e.id);
        return {
          id: event.id,
          type: event.type,
          workspaceId: event.workspaceId,
          occurredAt: Number(event.occurredAt),
          data: JSON.parse(event.dataJson) as unknown,
        };
      })
      .filter((e) => e.type.startsWith("credits."));
  const verify = async (key: string, times = 1, cost?: number) => {
    const codes: VerifyCode[] = [];
    for (let i = 0; i < times; i++) {
      codes.push(
        (await client.verifyKey({ caller, key, ...(cost === undefined ? {} : { cost: BigInt(cost) }) })).code,
      );
    }
    return codes;
  };
  return { deps, client, clock, published, verify, sink };
}

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

describe("credits.low and credits.exhausted", () => {
  it("announces credits.low once, on the spend that takes 100 credits from 10 to 9, with remaining 9 and threshold 10", async () => {
    const { client, published, verify } = service();
    const { apiId, keyId, key } = await keyWith(client, { remaining: 100n });
    await verify(key, 90);
    expect(published()).toEqual([]);
    await verify(key, 1);
    expect(published()).toEqual([
      {
        id: domainEventId("credits.low", "ws_1", keyId, START),
        type: "credits.low",
        workspaceId: "ws_1",
        occurredAt: START,
        data: { keyId, apiId, remaining: 9, threshold: 10, percent: 10 },
      },
    ]);
    await verify(key, 5);
    expect(published()).toHaveLength(1);
  });

  it("announces credits.exhausted once, on the spend that takes the balance to 0, and nothing for the refusals after", async () => {
    const { client, published, verify } = service();
    const { apiId, keyId, key } = await keyWith(client, { remaining: 3n });
    // 10 % of 3 is 0.3: the balance is low below 1, which only 0 is; both are announced by the last spend.
    expect(await verify(key, 5)).toEqual([
      VerifyCode.VALID,
      VerifyCode.VALID,
      VerifyCode.VALID,
      VerifyCode.USAGE_EXCEEDED,
      VerifyCode.USAGE_EXCEEDED,
    ]);
    expect(published().map((e) => [e.type, e.id, e.data])).toEqual([
      [
        "credits.low",
        domainEventId("credits.low", "ws_1", keyId, START),
        { keyId, apiId, remaining: 0, threshold: 1, percent: 10 },
      ],
      [
        "credits.exhausted",
        domainEventId("credits.exhausted", "ws_1", keyId, START),
        { keyId, apiId, remaining: 0 },
      ],
    ]);
  });

  it("announces credits.exhausted once, on the first verification refused for want of credits, when a cost of 3 leaves 10 credits at 1", async () => {
    const { client, published, verify, sink } = service({ creditsLowFraction: 0 });
    const { apiId, keyId, key } = await keyWith(client, { remaining: 10n });
    expect(await verify(key, 3, 3)).toEqual([VerifyCode.VALID, VerifyCode.VALID, VerifyCode.VALID]);
    expect(published()).toEqual([]);
    expect(await verify(key, 4, 3)).toEqual(Array(4).fill(VerifyCode.USAGE_EXCEEDED));
    expect(published()).toEqual([
      {
        id: domainEventId("credits.exhausted", "ws_1", keyId, START),
        type: "credits.exhausted",
        workspaceId: "ws_1",
        occurredAt: START,
        data: { keyId, apiId, remaining: 1 },
      },
    ]);
    // A cost the last credit still covers spends it and is not a refusal; the period's event stays the one.
    expect(await verify(key, 2, 1)).toEqual([VerifyCode.VALID, VerifyCode.USAGE_EXCEEDED]);
    expect(sink.kept.filter((e) => e.id === published()[0]!.id)).toHaveLength(1);
  });

  it("announces one cost that jumps across the threshold and to 0 at once", async () => {
    const { client, published, verify } = service();
    const { keyId, key } = await keyWith(client, { remaining: 50n });
    expect(await verify(key, 1, 50)).toEqual([VerifyCode.VALID]);
    expect(published().map((e) => [e.type, e.data])).toEqual([
      ["credits.low", { keyId, apiId: expect.any(String), remaining: 0, threshold: 5, percent: 10 }],
      ["credits.exhausted", { keyId, apiId: expect.any(String), remaining: 0 }],
    ]);
  });

  it("does not publish again in this process when an increment lifts the balance and a spend crosses again in the same period", async () => {
    const { client, published, verify } = service();
    const { keyId, key } = await keyWith(client, { remaining: 20n });
    await verify(key, 19); // 20 → 1: below 2, 10 % of 20
    await client.updateCredits({ caller, keyId, operation: CreditsOperation.INCREMENT, value: 10n }); // 11
    expect(await verify(key, 10)).toEqual(Array(10).fill(VerifyCode.VALID)); // 11 → 1: across 2 again, same period
    expect(published().map((e) => [e.type, e.id])).toEqual([
      ["credits.low", domainEventId("credits.low", "ws_1", keyId, START)],
    ]);
  });

  it("starts a new period with updateCredits set: a new baseline and a new event id", async () => {
    const { client, clock, published, verify } = service();
    const { keyId, key } = await keyWith(client, { remaining: 20n });
    await verify(key, 19); // 20 → 1
    clock.advance(60_000);
    await client.updateCredits({ caller, keyId, operation: CreditsOperation.SET, value: 200n });
    await verify(key, 181); // 200 → 19: below 20, 10 % of the 200 now given
    expect(published().map((e) => [e.type, e.id, (e.data as { threshold?: number }).threshold])).toEqual([
      ["credits.low", domainEventId("credits.low", "ws_1", keyId, START), 2],
      ["credits.low", domainEventId("credits.low", "ws_1", keyId, START + 60_000), 20],
    ]);
  });

  it("starts a new period with updateKey's credits.remaining too", async () => {
    const { client, clock, published, verify } = service();
    const { keyId, key } = await keyWith(client, { remaining: 10n });
    await verify(key, 10); // 10 → 0: low and exhausted
    clock.advance(1_000);
    await client.updateKey({ caller, keyId, credits: { remaining: 30n } });
    await verify(key, 28); // 30 → 2: below 3
    expect(published().map((e) => [e.type, e.id])).toEqual([
      ["credits.low", domainEventId("credits.low", "ws_1", keyId, START)],
      ["credits.exhausted", domainEventId("credits.exhausted", "ws_1", keyId, START)],
      ["credits.low", domainEventId("credits.low", "ws_1", keyId, START + 1_000)],
    ]);
  });

  it("starts a new period with each refill: a refilling key is announced low again the next day under a new id", async () => {
    const { client, clock, published, verify } = service();
    const { keyId, key } = await keyWith(client, { remaining: 100n, daily: 100n });
    await verify(key, 91);
    clock.set(Date.UTC(2026, 0, 2, 8));
    await verify(key, 91);
    const ids = published().map((e) => e.id);
    expect(published().map((e) => [e.type, (e.data as { remaining: number }).remaining])).toEqual([
      ["credits.low", 9],
      ["credits.low", 9],
    ]);
    // Created on the 1st: its first period starts at creation, the next at the refill of the 2nd, 00:00 UTC.
    expect(ids).toEqual([
      domainEventId("credits.low", "ws_1", keyId, START),
      domainEventId("credits.low", "ws_1", keyId, Date.UTC(2026, 0, 2)),
    ]);
    expect(Date.UTC(2026, 0, 2) - START).toBe(DAY / 2);
  });

  it("announces nothing for a key without credits", async () => {
    const { client, published, verify } = service();
    const { key } = await keyWith(client, {});
    expect(await verify(key, 50)).toEqual(Array(50).fill(VerifyCode.VALID));
    expect(published()).toEqual([]);
  });

  it("with CREDITS_LOW_FRACTION 0 announces no credits.low, still credits.exhausted", async () => {
    const { client, published, verify } = service({ creditsLowFraction: 0 });
    const { key } = await keyWith(client, { remaining: 10n });
    await verify(key, 10);
    expect(published().map((e) => e.type)).toEqual(["credits.exhausted"]);
  });

  it("keeps workspaces apart: the same verifications in two workspaces announce each in its own", async () => {
    const { client, published, verify } = service();
    const other = callerOf("ws_2", "*");
    const mine = await keyWith(client, { remaining: 10n });
    const { apiId } = await client.createApi({ caller: other, name: "theirs" });
    const theirs = await client.createKey({ caller: other, apiId, credits: { remaining: 10n } });
    await verify(mine.key, 10);
    for (let i = 0; i < 10; i++) await client.verifyKey({ caller: other, key: theirs.key });
    expect(published().map((e) => [e.type, e.workspaceId, (e.data as { keyId: string }).keyId])).toEqual([
      ["credits.low", "ws_1", mine.keyId],
      ["credits.exhausted", "ws_1", mine.keyId],
      ["credits.low", "ws_2", theirs.keyId],
      ["credits.exhausted", "ws_2", theirs.keyId],
    ]);
  });
});

describe("lowThreshold", () => {
  it.each([
    [100, 0.1, 10],
    [100, 0.07, 7],
    [15, 0.1, 2],
    [3, 0.1, 1],
    [0, 0.1, 0],
    [100, 1, 100],
    [1_000_000_000_000, 0.1, 100_000_000_000],
  ])("a baseline of %d at %d is low below %d", (baseline, fraction, threshold) => {
    expect(lowThreshold(baseline, fraction)).toBe(threshold);
  });
});

describe("CREDITS_LOW_FRACTION", () => {
  afterEach(() => {
    delete process.env["CREDITS_LOW_FRACTION"];
  });

  it("defaults to 0.1 and reads 0 to 1", () => {
    expect(creditsLowFractionFromEnv()).toBe(0.1);
    process.env["CREDITS_LOW_FRACTION"] = "0";
    expect(creditsLowFractionFromEnv()).toBe(0);
    process.env["CREDITS_LOW_FRACTION"] = "0.25";
    expect(creditsLowFractionFromEnv()).toBe(0.25);
  });

  it.each(["1.5", "-0.1", "ten", "0x1", "Infinity"])(
    "stops the start on '%s', naming the setting",
    (text) => {
      process.env["CREDITS_LOW_FRACTION"] = text;
      expect(() => creditsLowFractionFromEnv()).toThrow(
        `CREDITS_LOW_FRACTION must be a number from 0 to 1, got '${text}'`,
      );
    },
  );

  it("forgets a workspace's published ids under another's flood only to publish them again under the same id", () => {
    const sink = keepingEventSink();
    const events = new CreditEvents(sink, 100);
    const victim = { id: "key_victim", workspaceId: "ws_victim", apiId: "api_v" };
    const crossing = { period: START, low: undefined, exhausted: true };
    events.crossed(victim, 0, crossing, START);
    for (let i = 0; i < 1_000; i++) {
      events.crossed({ id: `key_${i}`, workspaceId: "ws_attacker", apiId: "api_a" }, 0, crossing, START);
    }
    // The victim's key crosses again in the same period (after an increment): the same event, same id.
    events.crossed(victim, 0, crossing, START + 1);
    const ids = sink.kept
      .filter((e) => e.subject === DOMAIN_EVENT_SUBJECT && e.id.length > 0)
      .map((e) => e.id);
    const victimId = domainEventId("credits.exhausted", "ws_victim", "key_victim", START);
    expect(ids.filter((id) => id === victimId)).toHaveLength(2);
    expect(new Set(ids).size).toBe(1_001);
  });
});
