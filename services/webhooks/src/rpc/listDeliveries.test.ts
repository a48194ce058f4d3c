import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root, WS } from "../../testing/in-memory-webhooks.ts";

const event = (id: string, type = "key.created") => ({
  id,
  type,
  workspaceId: WS,
  occurredAt: 1_000,
  dataJson: '{"keyId":"key_1","apiId":"api_1"}',
});

describe("ListDeliveries", () => {
  it("lists a webhook's deliveries newest first with their attempts, in pages and by status", async () => {
    const { client, create, all, deps, clock } = harness();
    const { webhookId } = await create();
    const t0 = clock.now();
    await deps.store.intake([event("evt_1")], t0);
    await deps.store.intake([event("evt_2")], t0 + 1);
    await deps.store.intake([event("evt_3")], t0 + 2);
    const [claimed] = await deps.store.claimDue(t0, 1, 60_000);
    await deps.store.recordAttempt(
      claimed!,
      { attemptedAt: t0 + 5, statusCode: 500, latencyMs: 7, error: "status 500" },
      { status: "pending", nextAttemptAt: t0 + 5_005 },
      15,
      "",
    );
    const first = await client.listDeliveries({ caller: all, webhookId, page: { limit: 2 } });
    expect(first.deliveries.map((d) => d.eventId)).toEqual(["evt_3", "evt_2"]);
    expect(first.page?.hasMore).toBe(true);
    const second = await client.listDeliveries({
      caller: all,
      webhookId,
      page: { limit: 2, cursor: first.page!.cursor },
    });
    expect(second.deliveries.map((d) => d.eventId)).toEqual(["evt_1"]);
    expect(second.page).toMatchObject({ hasMore: false, cursor: "" });
    expect(second.deliveries[0]).toMatchObject({
      eventType: "key.created",
      status: "pending",
      createdAt: BigInt(t0),
      nextAttemptAt: BigInt(t0 + 5_005),
      attempts: [{ attemptedAt: BigInt(t0 + 5), statusCode: 500, latencyMs: 7n, error: "status 500" }],
    });
    const failed = await client.listDeliveries({ caller: all, webhookId, status: "failed" });
    expect(failed.deliveries).toEqual([]);
    await expectReason(
      client.listDeliveries({ caller: all, webhookId, status: "lost" }),
      ErrorReason.INVALID_INPUT,
      {
        message: "status must be pending, delivered or failed, got 'lost'",
        location: "/status",
      },
    );
  });

  it("answers another workspace's webhook like a missing one", async () => {
    const { client, create, deps, clock } = harness();
    const { webhookId } = await create();
    await deps.store.intake([event("evt_1")], clock.now());
    await expectReason(
      client.listDeliveries({ caller: otherRoot("*"), webhookId }),
      ErrorReason.WEBHOOK_NOT_FOUND,
      {
        message: `The webhook '${webhookId}' was not found.`,
      },
    );
  });

  it("needs webhook.*.read", async () => {
    const { client, create } = harness();
    const { webhookId } = await create();
    await expectReason(
      client.listDeliveries({ caller: root("webhook.*.create"), webhookId }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      {
        message: lacks("webhook.*.read"),
      },
    );
  });
});
