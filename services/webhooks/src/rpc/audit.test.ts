import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AuditService } from "@latchkey/proto/audit/v1/audit_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, otherRoot, root, WS } from "../../testing/in-memory-webhooks.ts";
import { webhookRoutes } from "../routes.ts";

/** The caller the gateway sends on a management call: the root key's, with the request's id. */
const withRequest = (requestId: string) => ({ ...root("*"), requestId });

describe("the webhooks context's audit records", () => {
  it("leaves one record per change, with the request id, the webhook and the names of what was set, never values", async () => {
    const h = harness();
    const url = "https://user:pass@example.com/hook?token=url-secret";
    const plain = "https://example.com/hook?token=url-secret";
    await expectReason(
      h.client.createWebhook({ caller: withRequest("req_0"), url, events: ["key.created"] }),
      ErrorReason.INVALID_INPUT,
    );
    h.clock.advance(1);
    const created = await h.client.createWebhook({
      caller: withRequest("req_1"),
      url: plain,
      events: ["key.created"],
      description: "billing",
    });
    await h.deps.store.intake(
      [{ id: "evt_1", type: "key.created", workspaceId: WS, occurredAt: 1, dataJson: "{}" }],
      h.clock.now(),
    );
    h.clock.advance(1);
    await h.client.updateWebhook({
      caller: withRequest("req_2"),
      webhookId: created.webhookId,
      url: "https://example.org/other?token=url-secret-2",
      enabled: false,
    });
    h.clock.advance(1);
    const [delivery] = h.deps.store.allDeliveries();
    const again = await h.client.redeliver({
      caller: withRequest("req_3"),
      webhookId: created.webhookId,
      deliveryId: delivery!.id,
    });
    h.clock.advance(1);
    await h.client.deleteWebhook({ caller: withRequest("req_4"), webhookId: created.webhookId });
    // Reads leave nothing.
    await h.client.listWebhooks({ caller: withRequest("req_5") });

    const records = await h.deps.store.listAudit(WS, { limit: 100 });
    const webhook = { type: "webhook", id: created.webhookId };
    expect(
      records.map((r) => [r.operation, r.outcome, r.errorCode, r.requestId, r.resources, r.fields]),
    ).toEqual([
      ["webhooks.delete", "success", null, "req_4", [webhook], []],
      [
        "webhooks.redeliver",
        "success",
        null,
        "req_3",
        [webhook, { type: "delivery", id: delivery!.id }, { type: "delivery", id: again.deliveryId }],
        [],
      ],
      ["webhooks.update", "success", null, "req_2", [webhook], ["url", "enabled"]],
      ["webhooks.create", "success", null, "req_1", [webhook], ["url", "events", "description"]],
      ["webhooks.create", "failure", "INVALID_INPUT", "req_0", [], []],
    ]);
    expect(records.every((r) => r.actorType === "root_key" && r.actorId === "rk_test")).toBe(true);
    const text = JSON.stringify(records);
    for (const secret of [
      "url-secret",
      "user:pass",
      "example.com",
      "example.org",
      created.secret,
      "billing",
    ]) {
      expect(text).not.toContain(secret);
    }
  });

  it("records a refusal once as a failure naming what the request named, and writes no success", async () => {
    const h = harness({ maxWebhooksPerWorkspace: 1 });
    const theirs = await h.create({ caller: otherRoot("*") });
    await h.create();
    await expectReason(h.create({ caller: withRequest("req_full") }), ErrorReason.PRECONDITION_FAILED);
    h.clock.advance(1);
    await expectReason(
      h.client.updateWebhook({ caller: withRequest("req_u"), webhookId: theirs.webhookId, enabled: true }),
      ErrorReason.WEBHOOK_NOT_FOUND,
    );
    h.clock.advance(1);
    await expectReason(
      h.client.deleteWebhook({ caller: withRequest("req_d"), webhookId: "wh_2cGKbMxRjGzhCxo1" }),
      ErrorReason.WEBHOOK_NOT_FOUND,
    );
    h.clock.advance(1);
    await expectReason(
      h.client.redeliver({
        caller: withRequest("req_r"),
        webhookId: theirs.webhookId,
        deliveryId: "dlv_2cGKbMxRjGzhCxo1",
      }),
      ErrorReason.WEBHOOK_NOT_FOUND,
    );
    h.clock.advance(1);
    await expectReason(
      h.client.deleteWebhook({ caller: { ...root(), requestId: "req_p" }, webhookId: theirs.webhookId }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
    const failures = await h.deps.store.listAudit(WS, { limit: 100, outcome: "failure" });
    expect(failures.map((r) => [r.requestId, r.operation, r.errorCode, r.resources])).toEqual([
      ["req_p", "webhooks.delete", "INSUFFICIENT_PERMISSIONS", [{ type: "webhook", id: theirs.webhookId }]],
      [
        "req_r",
        "webhooks.redeliver",
        "WEBHOOK_NOT_FOUND",
        [
          { type: "webhook", id: theirs.webhookId },
          { type: "delivery", id: "dlv_2cGKbMxRjGzhCxo1" },
        ],
      ],
      ["req_d", "webhooks.delete", "WEBHOOK_NOT_FOUND", [{ type: "webhook", id: "wh_2cGKbMxRjGzhCxo1" }]],
      ["req_u", "webhooks.update", "WEBHOOK_NOT_FOUND", [{ type: "webhook", id: theirs.webhookId }]],
      ["req_full", "webhooks.create", "PRECONDITION_FAILED", []],
    ]);
    // The other workspace's change is in its own log only; its webhook did not change.
    expect((await h.deps.store.listAudit("ws_other", { limit: 100 })).map((r) => r.operation)).toEqual([
      "webhooks.create",
    ]);
    expect((await h.deps.store.findWebhook("ws_other", theirs.webhookId))?.enabled).toBe(true);
  });

  it("serves its records over audit.v1.AuditService to a root key holding audit.*.read, its workspace only", async () => {
    const h = harness();
    await h.create({ caller: withRequest("req_1") });
    const other = { ...otherRoot("*"), requestId: "req_other" };
    await h.create({ caller: other });
    const audit = createClient(AuditService, createRouterTransport(webhookRoutes(h.deps)));
    const { logs } = await audit.listAuditLogs({ caller: root("audit.*.read"), limit: 10 });
    expect(logs.map((l) => [l.operation, l.requestId, l.actorType])).toEqual([
      ["webhooks.create", "req_1", "root_key"],
    ]);
    await expectReason(
      audit.listAuditLogs({ caller: root("webhook.*.read") }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
  });
});
