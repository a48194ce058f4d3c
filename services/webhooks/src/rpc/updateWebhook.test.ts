import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root, WS } from "../../testing/in-memory-webhooks.ts";

describe("UpdateWebhook", () => {
  it("changes only the fields given", async () => {
    const { client, create, all, deps } = harness();
    const { webhookId } = await create();
    await client.updateWebhook({ caller: all, webhookId, events: { events: ["credits.exhausted"] } });
    expect(await deps.store.findWebhook(WS, webhookId)).toMatchObject({
      url: "https://example.com/hook",
      events: ["credits.exhausted"],
    });
    await client.updateWebhook({ caller: all, webhookId, url: "https://example.org/new", description: "x" });
    expect(await deps.store.findWebhook(WS, webhookId)).toMatchObject({
      url: "https://example.org/new",
      description: "x",
      events: ["credits.exhausted"],
    });
  });

  it("enabling a disabled webhook clears why it was disabled and its run of failures", async () => {
    const { client, create, all, deps } = harness();
    const { webhookId } = await create();
    const w = (await deps.store.findWebhook(WS, webhookId))!;
    await deps.store.createWebhook({ ...w, id: "unused", workspaceId: "ws_unused" }, 20);
    // As the worker leaves it after a run of failures.
    Object.assign(deps.store, {});
    await deps.store.updateWebhook(WS, webhookId, { enabled: false, updatedAt: 1 });
    const internal = deps.store as unknown as {
      webhooks: Map<string, { disabledReason: string | null; consecutiveFailures: number }>;
    };
    internal.webhooks.get(webhookId)!.disabledReason = "Disabled automatically";
    internal.webhooks.get(webhookId)!.consecutiveFailures = 15;
    await client.updateWebhook({ caller: all, webhookId, enabled: true });
    expect(await deps.store.findWebhook(WS, webhookId)).toMatchObject({
      enabled: true,
      disabledReason: null,
      consecutiveFailures: 0,
    });
  });

  it("refuses a private literal url and unknown events with 400", async () => {
    const { client, create, all } = harness();
    const { webhookId } = await create();
    await expectReason(
      client.updateWebhook({ caller: all, webhookId, url: "http://192.168.1.1/" }),
      ErrorReason.INVALID_INPUT,
      {
        location: "/url",
      },
    );
    await expectReason(
      client.updateWebhook({ caller: all, webhookId, events: { events: ["nope"] } }),
      ErrorReason.INVALID_INPUT,
      { location: "/events/0" },
    );
  });

  it("answers another workspace's webhook exactly like a missing one, and changes nothing", async () => {
    const { client, create, deps } = harness();
    const { webhookId } = await create();
    const theirs = await expectReason(
      client.updateWebhook({ caller: otherRoot("*"), webhookId, url: "https://evil.example/" }),
      ErrorReason.WEBHOOK_NOT_FOUND,
    );
    const missing = await expectReason(
      client.updateWebhook({ caller: otherRoot("*"), webhookId: "wh_missing", url: "https://evil.example/" }),
      ErrorReason.WEBHOOK_NOT_FOUND,
    );
    expect(theirs.rawMessage.replace(webhookId, "X")).toBe(missing.rawMessage.replace("wh_missing", "X"));
    expect((await deps.store.findWebhook(WS, webhookId))?.url).toBe("https://example.com/hook");
  });

  it("needs webhook.*.update", async () => {
    const { client, create } = harness();
    const { webhookId } = await create();
    await expectReason(
      client.updateWebhook({ caller: root("webhook.*.read"), webhookId, enabled: false }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      { message: lacks("webhook.*.update") },
    );
  });
});
