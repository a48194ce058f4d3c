import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root } from "../../testing/in-memory-webhooks.ts";

describe("ListWebhooks", () => {
  it("lists the workspace's webhooks in pages of the limit, without their secrets", async () => {
    const { client, create, all, clock } = harness();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await create({ events: ["key.created", "identity.deleted"] })).webhookId);
    ids.sort();
    const first = await client.listWebhooks({ caller: all, page: { limit: 2 } });
    expect(first.webhooks.map((w) => w.id)).toEqual(ids.slice(0, 2));
    expect(first.page).toMatchObject({ hasMore: true, cursor: ids[1] });
    const second = await client.listWebhooks({ caller: all, page: { limit: 2, cursor: first.page!.cursor } });
    expect(second.webhooks.map((w) => w.id)).toEqual([ids[2]]);
    expect(second.page).toMatchObject({ hasMore: false, cursor: "" });
    expect(second.webhooks[0]).toMatchObject({
      url: "https://example.com/hook",
      events: ["key.created", "identity.deleted"],
      description: "",
      enabled: true,
      createdAt: BigInt(clock.now()),
    });
    expect(second.webhooks[0]?.disabledReason).toBeUndefined();
  });

  it("shows another workspace none of them", async () => {
    const { client, create } = harness();
    await create();
    expect((await client.listWebhooks({ caller: otherRoot("*") })).webhooks).toEqual([]);
  });

  it("needs webhook.*.read", async () => {
    const { client } = harness();
    await expectReason(
      client.listWebhooks({ caller: root("webhook.*.create") }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      {
        message: lacks("webhook.*.read"),
      },
    );
  });
});
