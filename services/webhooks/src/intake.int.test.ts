import { randomBytes, randomUUID } from "node:crypto";
import {
  createLogger,
  DOMAIN_EVENT,
  domainEvent,
  JetStreamEventSink,
  loopProgress,
  migrate,
} from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { ownNatsServer } from "@latchkey/runtime/testing/nats-server";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createWebhookDeps, type WebhookDeps } from "./deps.ts";
import { startIntakeConsumer } from "./intake.ts";
import { webhookMigrations } from "./migrations.ts";

let db: TestDatabase;
let deps: WebhookDeps;
const log = createLogger("webhooks-test", "silent");
const cleanups: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.sql, "webhooks", webhookMigrations);
  deps = createWebhookDeps({ sql: db.sql, encryptionKey: randomBytes(32), log });
});

afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups.length = 0;
});

afterAll(async () => {
  await db.drop();
});

const eventually = async (check: () => Promise<boolean> | boolean, withinMs = 20_000) => {
  const until = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("not within time");
    await new Promise((r) => setTimeout(r, 50));
  }
};

/** A nats-server of this test's own (the shared one on 4222 is never stopped), and connections to it. */
async function ownNats() {
  const server = await ownNatsServer();
  cleanups.push(() => server.close());
  const connection = async () => {
    const nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    cleanups.push(() => nc.close());
    return nc;
  };
  return { start: server.start, stop: server.stop, connection };
}

async function webhookIn(workspaceId: string, events = ["key.created"]) {
  const id = `wh_${randomUUID()}`;
  await deps.store.createWebhook(
    {
      id,
      workspaceId,
      url: "https://example.com/hook",
      events,
      description: "",
      enabled: true,
      disabledReason: null,
      sealedSecret: deps.vault.seal(id, workspaceId, "whsec_x"),
      consecutiveFailures: 0,
      createdAt: 0,
      updatedAt: 0,
    },
    20,
  );
  return id;
}

async function consume(nats: NatsConnection) {
  const intake = await startIntakeConsumer({
    nats,
    store: deps.store,
    clock: deps.clock,
    log,
    durable: `webhooks_${randomUUID().slice(0, 8)}`,
  });
  cleanups.push(() => intake.stop());
  return intake;
}

const deliveriesOf = async (workspaceId: string, webhookId: string) =>
  deps.store.listDeliveries(workspaceId, webhookId, { limit: 100_000, after: undefined });

describe("the intake from JetStream (events.domain)", () => {
  it("makes a delivery of each matching event, and one of an event published twice with the same id", async () => {
    const nats = await ownNats();
    const nc = await nats.connection();
    const intake = await consume(nc);
    const ws = `ws_${randomUUID()}`;
    const hook = await webhookIn(ws, ["key.created", "identity.created"]);
    const sink = new JetStreamEventSink(nc, log, { intervalMs: 10 });
    cleanups.push(() => sink.close());
    const twice = domainEvent("key.created", ws, { keyId: "key_1", apiId: "api_1" }, 1_000);
    sink.publish(DOMAIN_EVENT, twice.id, twice);
    await sink.flush();
    sink.publish(DOMAIN_EVENT, twice.id, twice);
    const other = domainEvent("identity.created", ws, { identityId: "id_1", externalId: "u1" }, 2_000);
    const unwanted = domainEvent(
      "key.deleted",
      ws,
      { keyId: "key_1", apiId: "api_1", permanent: true },
      3_000,
    );
    const elsewhere = domainEvent(
      "key.created",
      `ws_${randomUUID()}`,
      { keyId: "key_2", apiId: "api_2" },
      3_000,
    );
    for (const e of [other, unwanted, elsewhere]) sink.publish(DOMAIN_EVENT, e.id, e);
    await sink.flush();
    // Two messages: the first publish alone, then the rest as one batch (JetStreamEventSink).
    await eventually(() => intake.stats().messages >= 2);
    const deliveries = await deliveriesOf(ws, hook);
    expect(deliveries.map((d) => d.eventId).sort()).toEqual([twice.id, other.id].sort());
    expect(deliveries.find((d) => d.eventId === twice.id)).toMatchObject({
      eventType: "key.created",
      occurredAt: 1_000,
      dataJson: '{"keyId":"key_1","apiId":"api_1"}',
      status: "pending",
    });
  });

  it("terminates a message PostgreSQL can never write and goes on with the next, another workspace's", async () => {
    const nats = await ownNats();
    const nc = await nats.connection();
    const intake = await consume(nc);
    const ws = `ws_${randomUUID()}`;
    const hook = await webhookIn(ws);
    const sink = new JetStreamEventSink(nc, log, { intervalMs: 10 });
    cleanups.push(() => sink.close());
    // A NUL in text: PostgreSQL refuses it with SQLSTATE 22021 every time.
    const poison = domainEvent("key.created", `ws_\u0000${randomUUID()}`, { keyId: "k", apiId: "a" }, 1_000);
    sink.publish(DOMAIN_EVENT, poison.id, poison);
    await sink.flush();
    const next = domainEvent("key.created", ws, { keyId: "key_1", apiId: "api_1" }, 2_000);
    sink.publish(DOMAIN_EVENT, next.id, next);
    await sink.flush();
    await eventually(() => intake.stats().messages >= 2, 10_000);
    expect(intake.stats()).toMatchObject({ messages: 2, unwritable: 1, failedWrites: 0, taken: 1 });
    expect((await deliveriesOf(ws, hook)).map((d) => d.eventId)).toEqual([next.id]);
  });

  it("writes the other events of a batch whose one event PostgreSQL can never write", async () => {
    const nats = await ownNats();
    const nc = await nats.connection();
    const intake = await consume(nc);
    const ws = `ws_${randomUUID()}`;
    const hook = await webhookIn(ws);
    const sink = new JetStreamEventSink(nc, log, { intervalMs: 10 });
    cleanups.push(() => sink.close());
    const before = domainEvent("key.created", ws, { keyId: "key_1", apiId: "api_1" }, 1_000);
    const poison = domainEvent("key.created", `ws_\u0000${randomUUID()}`, { keyId: "k", apiId: "a" }, 1_000);
    const after = domainEvent("key.created", ws, { keyId: "key_2", apiId: "api_1" }, 1_000);
    for (const e of [before, poison, after]) sink.publish(DOMAIN_EVENT, e.id, e);
    await sink.flush();
    await eventually(() => intake.stats().taken + intake.stats().unwritable >= 3, 10_000);
    expect(intake.stats()).toMatchObject({ unwritable: 1, taken: 2 });
    expect((await deliveriesOf(ws, hook)).map((d) => d.eventId).sort()).toEqual([before.id, after.id].sort());
  });

  it("loses no event when NATS is stopped during a burst", async () => {
    const nats = await ownNats();
    const publisher = await nats.connection();
    const consumer = await nats.connection();
    await consume(consumer);
    const ws = `ws_${randomUUID()}`;
    const hook = await webhookIn(ws);
    const sink = new JetStreamEventSink(publisher, log, { intervalMs: 10, batchSize: 50 });
    cleanups.push(() => sink.close());
    const N = 1_000;
    const ids: string[] = [];
    for (let i = 0; i < N; i += 50) {
      for (let j = i; j < i + 50; j++) {
        const e = domainEvent("key.created", ws, { keyId: `key_${j}`, apiId: "api_1" }, j);
        ids.push(e.id);
        sink.publish(DOMAIN_EVENT, e.id, e);
      }
      if (i === 300) {
        await nats.stop();
        await new Promise((r) => setTimeout(r, 500));
        await nats.start();
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    await sink.flush(30_000);
    expect(sink.stats()).toMatchObject({ buffered: 0, dropped: 0 });
    await eventually(async () => (await deliveriesOf(ws, hook)).length >= N, 30_000);
    const deliveries = await deliveriesOf(ws, hook);
    expect(deliveries).toHaveLength(N);
    expect(new Set(deliveries.map((d) => d.eventId))).toEqual(new Set(ids));
  }, 60_000);

  it("writes another workspace's event within seconds behind a flood of 5,000 events to 20 webhooks, queuing the flooder's deliveries only up to its bound, and marks its progress", async () => {
    const nats = await ownNats();
    const nc = await nats.connection();
    const bounded = createWebhookDeps({
      sql: db.sql,
      encryptionKey: randomBytes(32),
      log,
      settings: { maxPendingPerWorkspace: 2_000 },
    });
    const flooder = `ws_${randomUUID()}`;
    for (let i = 0; i < 20; i++) await webhookIn(flooder);
    const victim = `ws_${randomUUID()}`;
    const victimHook = await webhookIn(victim);
    const progress = loopProgress("webhooks.intake");
    const intake = await startIntakeConsumer({
      nats: nc,
      store: bounded.store,
      clock: bounded.clock,
      log,
      durable: `webhooks_${randomUUID().slice(0, 8)}`,
      // Less than one of the flood's messages: the reader holds one at a time and waits for room.
      maxArrivedBytes: 16 * 1024,
    });
    cleanups.push(() => intake.stop());
    const marks = progress.marks;
    const sink = new JetStreamEventSink(nc, log, { intervalMs: 10, batchSize: 500 });
    cleanups.push(() => sink.close());
    for (let i = 0; i < 5_000; i++) {
      const e = domainEvent("key.created", flooder, { keyId: `key_${i}`, apiId: "api_1" }, i);
      sink.publish(DOMAIN_EVENT, e.id, e);
    }
    await sink.flush(30_000);
    const e = domainEvent("key.created", victim, { keyId: "key_v", apiId: "api_1" }, 1);
    sink.publish(DOMAIN_EVENT, e.id, e);
    await sink.flush();
    const published = Date.now();
    await eventually(async () => (await deliveriesOf(victim, victimHook)).length === 1, 30_000);
    const took = Date.now() - published;
    await eventually(() => intake.stats().messages === 11, 30_000);
    const [{ n }] = (await db.sql`
      SELECT count(*)::int AS n FROM webhook_deliveries WHERE workspace_id = ${flooder} AND status = 'pending'`) as unknown as [
      { n: number },
    ];
    expect(n).toBe(2_000);
    expect(intake.stats()).toMatchObject({ messages: 11, taken: 2_001, unwritable: 0, failedWrites: 0 });
    expect(took).toBeLessThan(10_000);
    // A round per message at least (rounds of whole messages up to 1,000 events).
    expect(progress.marks - marks).toBeGreaterThanOrEqual(6);
  }, 60_000);
});
