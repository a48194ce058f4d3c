import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root, WS } from "../../testing/in-memory-webhooks.ts";

describe("Redeliver", () => {
  it("adds a new pending delivery of the same event, due now", async () => {
    const { client, create, all, deps, clock } = harness();
    const { webhookId } = await create();
    await deps.store.intake(
      [{ id: "evt_1", type: "key.created", workspaceId: WS, occurredAt: 1, dataJson: "{}" }],
      clock.now(),
    );
    const [original] = (await client.listDeliveries({ caller: all, webhookId })).deliveries;
    clock.advance(60_000);
    const { deliveryId } = await client.redeliver({ caller: all, webhookId, deliveryId: original!.id });
    expect(deliveryId).not.toBe(original!.id);
    const again = await deps.store.findDelivery(WS, webhookId, deliveryId);
    expect(again).toMatchObject({
      eventId: "evt_1",
      status: "pending",
      nextAttemptAt: clock.now(),
      redeliveryOf: original!.id,
    });
  });

  it("makes the redelivery due after the retry schedule's first wait", async () => {
    const { client, create, all, deps, clock } = harness({ retryScheduleMs: [30_000, 60_000] });
    const { webhookId } = await create();
    await deps.store.intake(
      [{ id: "evt_1", type: "key.created", workspaceId: WS, occurredAt: 1, dataJson: "{}" }],
      clock.now(),
    );
    const [original] = (await client.listDeliveries({ caller: all, webhookId })).deliveries;
    const { deliveryId } = await client.redeliver({ caller: all, webhookId, deliveryId: original!.id });
    expect((await deps.store.findDelivery(WS, webhookId, deliveryId))?.nextAttemptAt).toBe(
      clock.now() + 30_000,
    );
  });

  it("refuses with PRECONDITION_FAILED, and records nothing, while the workspace has its most deliveries waiting", async () => {
    const { client, create, all, deps, clock } = harness({ maxPendingPerWorkspace: 2 });
    const { webhookId } = await create();
    await deps.store.intake(
      ["evt_1", "evt_2"].map((id) => ({
        id,
        type: "key.created",
        workspaceId: WS,
        occurredAt: 1,
        dataJson: "{}",
      })),
      clock.now(),
    );
    const [original] = (await client.listDeliveries({ caller: all, webhookId })).deliveries;
    await expectReason(
      client.redeliver({ caller: all, webhookId, deliveryId: original!.id }),
      ErrorReason.PRECONDITION_FAILED,
    );
    expect((await client.listDeliveries({ caller: all, webhookId })).deliveries).toHaveLength(2);
  });

  it("answers a missing delivery and another workspace's webhook as not found", async () => {
    const { client, create, all, deps, clock } = harness();
    const { webhookId } = await create();
    await deps.store.intake(
      [{ id: "evt_1", type: "key.created", workspaceId: WS, occurredAt: 1, dataJson: "{}" }],
      clock.now(),
    );
    const [original] = (await client.listDeliveries({ caller: all, webhookId })).deliveries;
    await expectReason(
      client.redeliver({ caller: all, webhookId, deliveryId: "dlv_missing" }),
      ErrorReason.WEBHOOK_DELIVERY_NOT_FOUND,
      {
        message: "The delivery 'dlv_missing' was not found.",
      },
    );
    await expectReason(
      client.redeliver({ caller: otherRoot("*"), webhookId, deliveryId: original!.id }),
      ErrorReason.WEBHOOK_NOT_FOUND,
    );
    expect((await client.listDeliveries({ caller: all, webhookId })).deliveries).toHaveLength(1);
  });

  it("needs webhook.*.update", async () => {
    const { client, create } = harness();
    const { webhookId } = await create();
    await expectReason(
      client.redeliver({ caller: root("webhook.*.read"), webhookId, deliveryId: "dlv_x" }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      { message: lacks("webhook.*.update") },
    );
  });
});
