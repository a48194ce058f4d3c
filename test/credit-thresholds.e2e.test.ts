import { randomBytes } from "node:crypto";
import { createWorkspace } from "@latchkey/keys";
import { receiver } from "@latchkey/webhooks/testing/webhook-receiver";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./testing/process-stack.ts";

/**
 * A key's credit thresholds through separate processes: two keys instances behind the gateway spend one
 * key at once, publish credits.low to JetStream, and the webhooks process delivers each threshold's
 * event, signed, to a real receiver exactly once per credit period.
 */
const natsUrl = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";
const consumer = `credit_thresholds_e2e_${randomBytes(4).toString("hex")}`;

let stack: Stack;
let hooks: Awaited<ReturnType<typeof receiver>>;
let ws: { workspaceId: string; rootKey: string };

beforeAll(async () => {
  stack = await startStack({
    natsUrl,
    keysInstances: 2,
    webhooks: { consumer },
    env: { webhooks: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_POLL_MS: "50" } },
  });
  ws = await createWorkspace(stack.db.sql, `thresholds-${randomBytes(4).toString("hex")}`);
  hooks = await receiver();
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  const nc = await connect({ servers: natsUrl });
  await (await jetstreamManager(nc)).consumers.delete("LATCHKEY_EVENTS", consumer).catch(() => {});
  await nc.close();
  await hooks?.close();
});

async function call(operation: string, body: unknown) {
  const res = await stack.call(operation, body, ws.rootKey);
  expect([operation, res.status, res.status === 200 ? "" : JSON.stringify(res.body)]).toEqual([
    operation,
    200,
    "",
  ]);
  return res.body.data;
}

/** The verified bodies received, once `count` arrived (or the time ran out). */
async function delivered(secret: string, count: number, withinMs = 30_000) {
  const until = Date.now() + withinMs;
  while (hooks.received.length < count && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  return hooks.received.map((r) => ({
    id: String(r.headers["webhook-id"]),
    ...(new Webhook(secret).verify(r.body, {
      "webhook-id": String(r.headers["webhook-id"]),
      "webhook-timestamp": String(r.headers["webhook-timestamp"]),
      "webhook-signature": String(r.headers["webhook-signature"]),
    }) as { type: string; data: Record<string, unknown> }),
  }));
}

describe("credit thresholds through separate processes", () => {
  it("delivers each threshold's credits.low once per period, however many verifications race on two instances", async () => {
    const hook = await call("webhooks.create", { url: hooks.url, events: ["credits.low"] });
    const { apiId } = await call("apis.createApi", { name: "thresholds", creditThresholds: [90] });
    const { keyId, key } = await call("keys.createKey", {
      apiId,
      credits: { remaining: 40 },
      creditThresholds: [50, 20, 0],
    });
    expect((await call("keys.getKey", { keyId })).creditThresholds).toEqual([50, 20, 0]);
    const verifyAll = (n: number) =>
      Promise.all(
        Array.from({ length: n }, () => call("keys.verifyKey", { key }).then((d) => d.code as string)),
      );
    const codes = await verifyAll(60);
    expect(codes.filter((c) => c === "VALID")).toHaveLength(40);
    expect(codes.filter((c) => c === "USAGE_EXCEEDED")).toHaveLength(20);

    const first = await delivered(hook.secret, 3);
    expect(first.map((b) => [b.data["percent"], b.data["threshold"], b.data["remaining"]]).sort()).toEqual([
      [0, 0, 0],
      [20, 8, 8],
      [50, 20, 20],
    ]);
    // A balance given anew starts a new period: each threshold once more, under new ids.
    await call("keys.updateCredits", { keyId, operation: "set", value: 10 });
    await verifyAll(15);
    const all = await delivered(hook.secret, 6);
    await new Promise((r) => setTimeout(r, 1_000)); // nothing more comes
    expect(hooks.received).toHaveLength(6);
    expect(
      all
        .slice(3)
        .map((b) => [b.data["percent"], b.data["threshold"]])
        .sort(),
    ).toEqual([
      [0, 0],
      [20, 2],
      [50, 5],
    ]);
    expect(all.every((b) => b.type === "credits.low" && b.data["keyId"] === keyId)).toBe(true);
    expect(new Set(all.map((b) => b.id)).size).toBe(6);
  }, 120_000);
});
