import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./testing/process-stack.ts";

let stack: Stack;
beforeAll(async () => {
  // The webhooks service too: auditLogs.list merges its records with the others'.
  stack = await startStack({ webhooks: {}, portal: true });
});
afterAll(async () => {
  await stack?.stop();
});

describe("the audit log through the gateway (separate processes)", () => {
  it("lists the records keys, identity and webhooks wrote, each with its request's id, newest first", async () => {
    const api = await stack.call("apis.createApi", { name: "audited" });
    const identity = await stack.call("identities.createIdentity", { externalId: "user_audit" });
    const missing = await stack.call("keys.deleteKey", { keyId: "key_2cGKbMxRjGzhCxo1" });
    const webhook = await stack.call("webhooks.create", {
      url: "https://hooks.example.com/audit?token=e2e-url-secret",
      events: ["key.created"],
    });
    const noWebhook = await stack.call("webhooks.delete", { webhookId: "wh_2cGKbMxRjGzhCxo1" });
    expect([api.status, identity.status, missing.status, webhook.status, noWebhook.status]).toEqual([
      200, 200, 404, 200, 404,
    ]);

    const list = await stack.call("auditLogs.list", { limit: 100 });
    expect(list.status).toBe(200);
    const byRequest = (res: { body: { meta: { requestId: string } } }) =>
      list.body.data.filter((r: { requestId: string }) => r.requestId === res.body.meta.requestId);
    expect(byRequest(api)).toEqual([
      expect.objectContaining({
        operation: "apis.createApi",
        resources: [{ type: "api", id: api.body.data.apiId }],
        outcome: "success",
        error: null,
        fields: ["name"],
      }),
    ]);
    expect(byRequest(identity)).toEqual([
      expect.objectContaining({ operation: "identities.createIdentity", outcome: "success" }),
    ]);
    expect(byRequest(missing)).toEqual([
      expect.objectContaining({
        operation: "keys.deleteKey",
        outcome: "failure",
        error: { code: "KEY_NOT_FOUND" },
      }),
    ]);
    expect(byRequest(webhook)).toEqual([
      expect.objectContaining({
        operation: "webhooks.create",
        actor: { type: "root_key", id: expect.stringMatching(/^rk_/) },
        resources: [{ type: "webhook", id: webhook.body.data.webhookId }],
        outcome: "success",
        fields: ["url", "events"],
      }),
    ]);
    expect(byRequest(noWebhook)).toEqual([
      expect.objectContaining({
        operation: "webhooks.delete",
        resources: [{ type: "webhook", id: "wh_2cGKbMxRjGzhCxo1" }],
        outcome: "failure",
        error: { code: "WEBHOOK_NOT_FOUND" },
      }),
    ]);
    const text = JSON.stringify(list.body.data);
    for (const secret of [webhook.body.data.secret, "e2e-url-secret", "hooks.example.com"]) {
      expect(text).not.toContain(secret);
    }
    const times = list.body.data.map((r: { time: number }) => r.time);
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });
});
