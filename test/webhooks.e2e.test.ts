import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createWorkspace } from "@latchkey/keys";
import { createLogger, DOMAIN_EVENT, domainEvent, JetStreamEventSink } from "@latchkey/runtime";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./testing/process-stack.ts";

/**
 * The webhooks service as its own process behind the gateway, taking DomainEvents from JetStream
 * (a durable consumer of its own on the shared stream, deleted afterwards) and delivering to a
 * receiver on this machine (WEBHOOK_ALLOW_PRIVATE_URLS=true for it), with a fast retry schedule.
 */
const natsUrl = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";
const consumer = `webhooks_e2e_${randomBytes(4).toString("hex")}`;
let stack: Stack;
let nats: NatsConnection;
let sink: JetStreamEventSink;
let receiver: http.Server;
let receiverUrl = "";
const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
let a: { workspaceId: string; rootKey: string };
let b: { workspaceId: string; rootKey: string };

beforeAll(async () => {
  stack = await startStack({
    natsUrl,
    webhooks: { consumer },
    env: {
      webhooks: {
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WEBHOOK_RETRY_SCHEDULE_MS: "0,200,200,200,200",
        WEBHOOK_POLL_MS: "50",
      },
    },
  });
  a = await createWorkspace(stack.db.sql, `webhooks-a-${randomBytes(4).toString("hex")}`);
  b = await createWorkspace(stack.db.sql, `webhooks-b-${randomBytes(4).toString("hex")}`);
  nats = await connect({ servers: natsUrl });
  sink = new JetStreamEventSink(nats, createLogger("e2e", "silent"), { intervalMs: 10 });
  receiver = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      res.statusCode = received.length <= 3 ? 500 : 200;
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
}, 120_000);

afterAll(async () => {
  sink?.close();
  await stack?.stop();
  if (nats) {
    await (await jetstreamManager(nats)).consumers.delete("LATCHKEY_EVENTS", consumer).catch(() => {});
    await nats.close();
  }
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
});

const eventually = async <T>(check: () => Promise<T | undefined>, withinMs = 20_000): Promise<T> => {
  const until = Date.now() + withinMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error("not within time");
    await new Promise((r) => setTimeout(r, 100));
  }
};

describe("webhooks through the gateway, the webhooks process and JetStream", () => {
  it("delivers an event on the fourth attempt after three 500s, signed, with the same webhook-id, and logs each attempt", async () => {
    const created = await stack.call(
      "webhooks.create",
      { url: receiverUrl, events: ["key.created"], description: "e2e" },
      a.rootKey,
    );
    expect(created.status).toBe(200);
    const { webhookId, secret } = created.body.data;
    expect(secret).toMatch(/^whsec_/);

    const event = domainEvent(
      "key.created",
      a.workspaceId,
      { keyId: "key_e2e", apiId: "api_e2e" },
      Date.now(),
    );
    sink.publish(DOMAIN_EVENT, event.id, event);
    // The same event again (same id): still one delivery.
    sink.publish(DOMAIN_EVENT, event.id, event);
    await sink.flush();

    const delivered = await eventually(async () => {
      const res = await stack.call("webhooks.listDeliveries", { webhookId }, a.rootKey);
      const d = res.body.data[0];
      return d?.status === "delivered" ? res.body.data : undefined;
    });
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({ eventId: event.id, eventType: "key.created", nextAttemptAt: null });
    expect(delivered[0].attempts.map((x: { statusCode: number }) => x.statusCode)).toEqual([
      500, 500, 500, 200,
    ]);
    expect(received.map((r) => r.headers["webhook-id"])).toEqual([event.id, event.id, event.id, event.id]);
    const last = received[3]!;
    expect(
      new Webhook(secret).verify(last.body, {
        "webhook-id": String(last.headers["webhook-id"]),
        "webhook-timestamp": String(last.headers["webhook-timestamp"]),
        "webhook-signature": String(last.headers["webhook-signature"]),
      }),
    ).toEqual({
      type: "key.created",
      timestamp: new Date(Number(event.occurredAt)).toISOString(),
      data: { keyId: "key_e2e", apiId: "api_e2e" },
    });

    // Another workspace sees none of it and cannot touch it: answered exactly as a missing webhook.
    expect((await stack.call("webhooks.list", {}, b.rootKey)).body.data).toEqual([]);
    for (const [operation, body] of [
      ["webhooks.listDeliveries", { webhookId }],
      ["webhooks.update", { webhookId, enabled: false }],
      ["webhooks.redeliver", { webhookId, deliveryId: delivered[0].deliveryId }],
      ["webhooks.delete", { webhookId }],
    ] as const) {
      const theirs = await stack.call(operation, body, b.rootKey);
      const missing = await stack.call(operation, { ...body, webhookId: "wh_missing" }, b.rootKey);
      expect([operation, theirs.status, theirs.body.error.type]).toEqual([
        operation,
        404,
        missing.body.error.type,
      ]);
      expect(theirs.body.error.detail.replace(webhookId, "X")).toBe(
        missing.body.error.detail.replace("wh_missing", "X"),
      );
    }
    const listed = await stack.call("webhooks.list", {}, a.rootKey);
    expect(listed.body.data).toEqual([
      {
        webhookId,
        url: receiverUrl,
        events: ["key.created"],
        description: "e2e",
        enabled: true,
        disabledReason: null,
        createdAt: expect.any(Number),
      },
    ]);
  }, 60_000);

  it("refuses a URL that is not http or https with 400 saying why", async () => {
    const res = await stack.call(
      "webhooks.create",
      { url: "ftp://example.com/x", events: ["key.created"] },
      a.rootKey,
    );
    expect(res.status).toBe(400);
    expect(res.body.error.detail).toBe("url must use http or https, not ftp");
  });
});
