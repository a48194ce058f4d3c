import {
  createLogger,
  DirectEventSink,
  DOMAIN_EVENT,
  domainEvent,
  type EventType,
  loopProgress,
  TestClock,
} from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { eventRecordOf, InProcessIntake, withDomainEvents, writeErrorKind } from "./intake.ts";
import { webhookDeliveriesRefused, webhookEventsDropped } from "./metrics.ts";
import { MemoryWebhookStore } from "./store/memory-webhook-store.ts";
import type { EventRecord, WebhookStore } from "./store/webhook-store.ts";

const log = createLogger("webhooks-test", "silent");
const clock = new TestClock(5_000);

async function storeWithWebhook(workspaceId = "ws_1") {
  const store = new MemoryWebhookStore();
  await store.createWebhook(
    {
      id: "wh_1",
      workspaceId,
      url: "https://example.com",
      events: ["key.created"],
      description: "",
      enabled: true,
      disabledReason: null,
      sealedSecret: "x",
      consecutiveFailures: 0,
      createdAt: 0,
      updatedAt: 0,
    },
    20,
  );
  return store;
}

describe("the in-process intake (npm start without NATS)", () => {
  it("hands DomainEvents to the intake and every other event to the rest, as they are", async () => {
    const store = await storeWithWebhook();
    const intake = new InProcessIntake(store, clock, log);
    const rest: string[] = [];
    const sink = withDomainEvents(new DirectEventSink((subject) => rest.push(subject)), (e) =>
      intake.take(e),
    );
    const e = domainEvent("key.created", "ws_1", { keyId: "key_1", apiId: "api_1" }, 1_000);
    sink.publish(DOMAIN_EVENT, e.id, e);
    sink.publish(DOMAIN_EVENT, e.id, e);
    const other: EventType = { subject: "events.keys.verified", encode: () => new Uint8Array() };
    sink.publish(other, "v1", e);
    expect(rest).toEqual(["events.keys.verified"]);
    await intake.flush();
    expect(store.allDeliveries().map((d) => [d.eventId, d.createdAt, d.dataJson])).toEqual([
      [e.id, 5_000, '{"keyId":"key_1","apiId":"api_1"}'],
    ]);
    expect(intake.stats()).toMatchObject({ buffered: 0, taken: 2, dropped: 0 });
  });

  it("never makes the publisher wait: take() returns before the store has written anything", async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const store = await storeWithWebhook();
    const slow: WebhookStore = Object.assign(Object.create(store), {
      async intake(events: readonly EventRecord[], now: number) {
        await gate;
        return store.intake(events, now);
      },
    });
    const intake = new InProcessIntake(slow, clock, log);
    intake.take(domainEvent("key.created", "ws_1", { keyId: "key_1", apiId: "api_1" }, 1));
    expect(intake.stats().buffered).toBe(1);
    expect(store.allDeliveries()).toEqual([]);
    release();
    await intake.flush();
    expect(store.allDeliveries()).toHaveLength(1);
  });

  it("retries a failed write with the same events, and drops what is queued when closed while it fails", async () => {
    const store = await storeWithWebhook();
    let failures = 1;
    const flaky: WebhookStore = Object.assign(Object.create(store), {
      async intake(events: readonly EventRecord[], now: number) {
        if (failures-- > 0) throw new Error("database down");
        return store.intake(events, now);
      },
    });
    const intake = new InProcessIntake(flaky, clock, log, { retryMs: 10 });
    intake.take(domainEvent("key.created", "ws_1", { keyId: "key_1", apiId: "api_1" }, 1));
    await intake.flush();
    expect(store.allDeliveries()).toHaveLength(1);

    const down: WebhookStore = Object.assign(Object.create(store), {
      async intake() {
        throw new Error("database down");
      },
    });
    const closing = new InProcessIntake(down, clock, log, { retryMs: 10 });
    closing.take(domainEvent("key.created", "ws_1", { keyId: "key_2", apiId: "api_1" }, 1));
    await closing.close();
    expect(closing.stats()).toMatchObject({ buffered: 0, dropped: 1 });
  });

  it("drops only the event no write will take, with one try, and the others go on", async () => {
    const store = await storeWithWebhook();
    const bad = domainEvent("key.created", "ws_1", { keyId: "bad", apiId: "a" }, 1);
    const calls: number[] = [];
    const strict: WebhookStore = Object.assign(Object.create(store), {
      async intake(events: readonly EventRecord[], now: number) {
        calls.push(events.length);
        if (events.some((e) => e.id === bad.id)) {
          throw Object.assign(new Error("value too long for type character varying(64)"), { code: "22001" });
        }
        return store.intake(events, now);
      },
    });
    const intake = new InProcessIntake(strict, clock, log, { retryMs: 10_000 });
    const good = [1, 2].map((i) => domainEvent("key.created", "ws_1", { keyId: `k${i}`, apiId: "a" }, 1));
    intake.take(good[0]!);
    intake.take(bad);
    intake.take(good[1]!);
    await intake.flush();
    // The first event is written as it comes; the batch of the next two fails once, then each is
    // written alone: the bad one is tried once alone, never again.
    expect(calls).toEqual([1, 2, 1, 1]);
    expect(store.allDeliveries().map((d) => d.eventId)).toEqual(good.map((e) => e.id));
    expect(intake.stats()).toEqual({ buffered: 0, taken: 2, dropped: 1 });
  });

  it("gives up on an unknown error after maxTries, but retries a transient one for as long as it lasts", async () => {
    const store = await storeWithWebhook();
    let calls = 0;
    const broken: WebhookStore = Object.assign(Object.create(store), {
      async intake() {
        calls++;
        throw new Error("something unexpected");
      },
    });
    const intake = new InProcessIntake(broken, clock, log, { retryMs: 1, maxTries: 3 });
    intake.take(domainEvent("key.created", "ws_1", { keyId: "k", apiId: "a" }, 1));
    await intake.flush();
    expect(calls).toBe(3);
    expect(intake.stats()).toEqual({ buffered: 0, taken: 0, dropped: 1 });

    let down = 5;
    const flaky: WebhookStore = Object.assign(Object.create(store), {
      async intake(events: readonly EventRecord[], now: number) {
        if (down-- > 0) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
        return store.intake(events, now);
      },
    });
    const patient = new InProcessIntake(flaky, clock, log, { retryMs: 1, maxTries: 3 });
    patient.take(domainEvent("key.created", "ws_1", { keyId: "k2", apiId: "a" }, 1));
    await patient.flush();
    expect(patient.stats()).toEqual({ buffered: 0, taken: 1, dropped: 0 });
    expect(store.allDeliveries()).toHaveLength(1);
  });

  it("tells permanent write errors from transient ones", () => {
    const withCode = (code: string) => Object.assign(new Error(code), { code });
    expect(["22001", "22P02", "22021", "23505", "23502"].map((c) => writeErrorKind(withCode(c)))).toEqual(
      Array(5).fill("permanent"),
    );
    expect(
      ["08006", "40001", "40P01", "53300", "57P01", "57014", "55P03", "ECONNRESET", "CONNECTION_CLOSED"].map(
        (c) => writeErrorKind(withCode(c)),
      ),
    ).toEqual(Array(9).fill("transient"));
    expect([new Error("x"), withCode("42P01"), null, "text"].map(writeErrorKind)).toEqual(
      Array(4).fill("unknown"),
    );
  });

  it("makes a new delivery due after the first wait of the retry schedule", async () => {
    const store = await storeWithWebhook();
    const intake = new InProcessIntake(store, clock, log, { firstDelayMs: 5_000 });
    intake.take(domainEvent("key.created", "ws_1", { keyId: "k", apiId: "a" }, 1));
    await intake.flush();
    expect(store.allDeliveries().map((d) => [d.createdAt, d.nextAttemptAt])).toEqual([[5_000, 10_000]]);
  });

  it("keeps an event's data when it is a JSON object, and {} otherwise, so every body parses", () => {
    const e = domainEvent("key.created", "ws_1", { keyId: "key_1", apiId: "api_1" }, 1);
    expect(eventRecordOf(e).dataJson).toBe('{"keyId":"key_1","apiId":"api_1"}');
    for (const bad of ["", "not json", "[1,2]", "null", "3"]) {
      expect(eventRecordOf({ ...e, dataJson: bad }).dataJson).toBe("{}");
    }
  });

  it("drops, counts and logs past its bound", async () => {
    const store = await storeWithWebhook();
    const intake = new InProcessIntake(store, clock, log, { maxBuffered: 2 });
    for (let i = 0; i < 3; i++)
      intake.take(domainEvent("key.created", "ws_1", { keyId: `k${i}`, apiId: "a" }, 1));
    expect(intake.stats().dropped).toBe(1);
    await intake.flush();
    expect(store.allDeliveries()).toHaveLength(2);
  });

  it("writes another workspace's events ahead of a flood: the flooder's queue waits, not the others'", async () => {
    const store = new MemoryWebhookStore();
    for (let i = 0; i < 20; i++) {
      await store.createWebhook(
        {
          id: `wh_flood_${i}`,
          workspaceId: "ws_flood",
          url: "https://example.com",
          events: ["key.created"],
          description: "",
          enabled: true,
          disabledReason: null,
          sealedSecret: "x",
          consecutiveFailures: 0,
          createdAt: 0,
          updatedAt: 0,
        },
        20,
      );
    }
    await store.createWebhook(
      {
        id: "wh_victim",
        workspaceId: "ws_victim",
        url: "https://example.com",
        events: ["key.created"],
        description: "",
        enabled: true,
        disabledReason: null,
        sealedSecret: "x",
        consecutiveFailures: 0,
        createdAt: 0,
        updatedAt: 0,
      },
      20,
    );
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const writes: string[][] = [];
    const gated: WebhookStore = Object.assign(Object.create(store), {
      async intake(events: readonly EventRecord[], now: number) {
        await gate;
        writes.push([...new Set(events.map((e) => e.workspaceId))]);
        return store.intake(events, now);
      },
    });
    const progress = loopProgress("webhooks.intake");
    const marks = progress.marks;
    const intake = new InProcessIntake(gated, clock, log);
    for (let i = 0; i < 3_000; i++) {
      intake.take(domainEvent("key.created", "ws_flood", { keyId: `k${i}`, apiId: "a" }, 1));
    }
    const victim = domainEvent("key.created", "ws_victim", { keyId: "kv", apiId: "a" }, 1);
    intake.take(victim);
    release();
    await intake.flush();
    // The first write was the flood's first event, taken as it came; the next batch writes the
    // victim's event first, then the flood's share of the batch.
    expect(writes.slice(0, 3)).toEqual([["ws_flood"], ["ws_victim"], ["ws_flood"]]);
    expect(intake.stats()).toEqual({ buffered: 0, taken: 3_001, dropped: 0 });
    expect(store.allDeliveries()).toHaveLength(3_000 * 20 + 1);
    // Every batch of the flood marked the loop's progress: 1 + 3,000 / 200 batches.
    expect(progress.marks - marks).toBe(16);
  });

  it("bounds what each workspace may have waiting, apart from the total, and says which bound dropped an event", async () => {
    const store = await storeWithWebhook();
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const gated: WebhookStore = Object.assign(Object.create(store), {
      async intake(events: readonly EventRecord[], now: number) {
        await gate;
        return store.intake(events, now);
      },
    });
    const dropped = async () =>
      Object.fromEntries((await webhookEventsDropped.get()).values.map((v) => [v.labels.reason, v.value]));
    const before = await dropped();
    const intake = new InProcessIntake(gated, clock, log, { maxBufferedPerWorkspace: 3, maxBuffered: 5 });
    for (let i = 0; i < 5; i++)
      intake.take(domainEvent("key.created", "ws_1", { keyId: `k${i}`, apiId: "a" }, 1));
    // Three of ws_1's wait (the one being written among them); its fourth and fifth find its queue full.
    for (let i = 0; i < 3; i++)
      intake.take(domainEvent("key.created", "ws_2", { keyId: `j${i}`, apiId: "a" }, 1));
    // ws_2's first two fill the five in all; its third finds the whole buffer full.
    expect(intake.stats()).toEqual({ buffered: 5, taken: 0, dropped: 3 });
    const after = await dropped();
    expect((after["workspace_buffer_full"] ?? 0) - (before["workspace_buffer_full"] ?? 0)).toBe(2);
    expect((after["buffer_full"] ?? 0) - (before["buffer_full"] ?? 0)).toBe(1);
    release();
    await intake.flush();
    expect(intake.stats()).toEqual({ buffered: 0, taken: 5, dropped: 3 });
  });

  it("queues no more of a workspace's deliveries than its bound of pending ones, counting those refused", async () => {
    const store = new MemoryWebhookStore({ maxPendingPerWorkspace: 50 });
    await store.createWebhook(
      {
        id: "wh_1",
        workspaceId: "ws_1",
        url: "https://example.com",
        events: ["key.created"],
        description: "",
        enabled: true,
        disabledReason: null,
        sealedSecret: "x",
        consecutiveFailures: 0,
        createdAt: 0,
        updatedAt: 0,
      },
      20,
    );
    const refused = async () => (await webhookDeliveriesRefused.get()).values[0]?.value ?? 0;
    const before = await refused();
    const intake = new InProcessIntake(store, clock, log);
    for (let i = 0; i < 80; i++)
      intake.take(domainEvent("key.created", "ws_1", { keyId: `k${i}`, apiId: "a" }, 1));
    await intake.flush();
    expect(store.allDeliveries()).toHaveLength(50);
    expect((await refused()) - before).toBe(30);
    expect(intake.stats()).toEqual({ buffered: 0, taken: 80, dropped: 0 });
  });

  it("marks its progress every second while nothing waits", async () => {
    const progress = loopProgress("webhooks.intake");
    const intake = new InProcessIntake(await storeWithWebhook(), clock, log);
    const marks = progress.marks;
    await new Promise((r) => setTimeout(r, 2_300));
    expect(progress.marks - marks).toBeGreaterThanOrEqual(2);
    await intake.close();
  });
});
