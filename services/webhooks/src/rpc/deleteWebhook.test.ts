import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root, WS } from "../../testing/in-memory-webhooks.ts";

describe("DeleteWebhook", () => {
  it("deletes the webhook; deleting it again is 404", async () => {
    const { client, create, all, deps } = harness();
    const { webhookId } = await create();
    await client.deleteWebhook({ caller: all, webhookId });
    expect(await deps.store.findWebhook(WS, webhookId)).toBeUndefined();
    await expectReason(client.deleteWebhook({ caller: all, webhookId }), ErrorReason.WEBHOOK_NOT_FOUND, {
      message: `The webhook '${webhookId}' was not found.`,
    });
  });

  it("answers another workspace's webhook like a missing one and leaves it", async () => {
    const { client, create, deps } = harness();
    const { webhookId } = await create();
    await expectReason(
      client.deleteWebhook({ caller: otherRoot("*"), webhookId }),
      ErrorReason.WEBHOOK_NOT_FOUND,
      {
        message: `The webhook '${webhookId}' was not found.`,
      },
    );
    expect(await deps.store.findWebhook(WS, webhookId)).toBeDefined();
  });

  it("needs webhook.*.delete", async () => {
    const { client, create } = harness();
    const { webhookId } = await create();
    await expectReason(
      client.deleteWebhook({ caller: root("webhook.*.update"), webhookId }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      {
        message: lacks("webhook.*.delete"),
      },
    );
  });
});
