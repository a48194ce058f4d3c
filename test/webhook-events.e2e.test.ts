import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createWorkspace } from "@latchkey/keys";
import { DOMAIN_EVENT_TYPES } from "@latchkey/runtime";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./testing/process-stack.ts";

/**
 * The nine event types as real operations cause them, with nothing published by the test: keys,
 * identity and ratelimit (separate processes) publish to JetStream, the webhooks process takes them
 * from its durable consumer and delivers them, signed, to a receiver of each workspace.
 */
const natsUrl = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";
const consumer = `webhook_events_e2e_${randomBytes(4).toString("hex")}`;

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let stack: Stack;
let receiver: http.Server;
let base = "";
const received: Received[] = [];
let a: { workspaceId: string; rootKey: string };
let b: { workspaceId: string; rootKey: string };

beforeAll(async () => {
  stack = await startStack({
    natsUrl,
    webhooks: { consumer },
    env: { webhooks: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_POLL_MS: "50" } },
  });
  a = await createWorkspace(stack.db.sql, `events-a-${randomBytes(4).toString("hex")}`);
  b = await createWorkspace(stack.db.sql, `events-b-${randomBytes(4).toString("hex")}`);
  receiver = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push({ path: req.url ?? "", headers: req.headers, body });
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  const nc = await connect({ servers: natsUrl });
  await (await jetstreamManager(nc)).consumers.delete("LATCHKEY_EVENTS", consumer).catch(() => {});
  await nc.close();
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
});

/** The verified bodies of what reached `path`, once `count` arrived (or the time ran out). */
async function bodiesAt(path: string, secret: string, count: number, withinMs = 30_000) {
  const until = Date.now() + withinMs;
  while (received.filter((r) => r.path === path).length < count && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
  }
  return received
    .filter((r) => r.path === path)
    .map((r) => ({
      id: String(r.headers["webhook-id"]),
      ...(new Webhook(secret).verify(r.body, {
        "webhook-id": String(r.headers["webhook-id"]),
        "webhook-timestamp": String(r.headers["webhook-timestamp"]),
        "webhook-signature": String(r.headers["webhook-signature"]),
      }) as { type: string; data: Record<string, unknown> }),
    }));
}

describe("webhook events caused by real operations (separate processes, JetStream)", () => {
  it("delivers what each operation causes exactly once, signed, to its own workspace only", async () => {
    const call = async (operation: string, body: unknown, key = a.rootKey) => {
      const res = await stack.call(operation, body, key);
      expect([operation, res.status]).toEqual([operation, 200]);
      return res.body.data;
    };
    const hook = await call("webhooks.create", { url: `${base}/a`, events: [...DOMAIN_EVENT_TYPES] });
    // Workspace B listens for everything too, and must hear nothing of A.
    const other = await call(
      "webhooks.create",
      { url: `${base}/b`, events: [...DOMAIN_EVENT_TYPES] },
      b.rootKey,
    );

    const { apiId } = await call("apis.createApi", { name: "events" });
    // 20 credits: below ceil(20 × 0.1) = 2 is low, so the 19th verification (1 left) announces it.
    const { keyId, key } = await call("keys.createKey", { apiId, credits: { remaining: 20 } });
    await call("keys.updateKey", { keyId, name: "renamed" });
    const codes: string[] = [];
    for (let i = 0; i < 22; i++) codes.push((await call("keys.verifyKey", { key })).code);
    expect(codes).toEqual([...Array(20).fill("VALID"), "USAGE_EXCEEDED", "USAGE_EXCEEDED"]);
    await call("keys.updateCredits", { keyId, operation: "increment", value: 5 });
    // Below the threshold again in the same period: the same credits.low, not announced again.
    for (let i = 0; i < 5; i++) await call("keys.verifyKey", { key });

    const limited: boolean[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await call("ratelimits.limit", {
        namespace: "events",
        identifier: "u1",
        limit: 1,
        duration: 86_400_000,
      });
      limited.push(r.success);
    }
    expect(limited).toEqual([true, false, false, false, false]);

    const identity = await call("identities.createIdentity", { externalId: "user_events" });
    await call("identities.deleteIdentity", { identity: "user_events" });
    const rerolled = await call("keys.rerollKey", { keyId, expiration: 0 });
    await call("keys.deleteKey", { keyId: rerolled.keyId });

    const bodies = await bodiesAt("/a", hook.secret, 10);
    // key.updated twice: the name, then the credits.
    expect(bodies.map((x) => x.type).sort()).toEqual(
      [
        "credits.exhausted",
        "credits.low",
        "identity.created",
        "identity.deleted",
        "key.created",
        "key.deleted",
        "key.rerolled",
        "key.updated",
        "key.updated",
        "ratelimit.exceeded",
      ].sort(),
    );
    const one = (type: string) => bodies.find((x) => x.type === type)!.data;
    expect(one("credits.low")).toEqual({ keyId, apiId, remaining: 1, threshold: 2, percent: 10 });
    expect(one("credits.exhausted")).toEqual({ keyId, apiId, remaining: 0 });
    expect(one("ratelimit.exceeded")).toMatchObject({
      namespace: "events",
      identifier: "u1",
      limit: 1,
      duration: 86_400_000,
    });
    expect(one("identity.created")).toEqual({ identityId: identity.identityId, externalId: "user_events" });
    expect(one("key.rerolled")).toMatchObject({ keyId, apiId, newKeyId: rerolled.keyId });
    expect(new Set(bodies.map((x) => x.id)).size).toBe(bodies.length);
    expect(JSON.stringify(bodies)).not.toContain(key);

    // Nothing of A reached B's receiver.
    await new Promise((r) => setTimeout(r, 500));
    expect(await bodiesAt("/b", other.secret, 0, 0)).toEqual([]);
    const deliveries = await call("webhooks.listDeliveries", { webhookId: other.webhookId }, b.rootKey);
    expect(deliveries).toEqual([]);
  }, 90_000);
});
