import { hashKey } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { inMemoryStack } from "../testing/in-memory-stack.ts";

describe("webhooks through the gateway over the real webhooks service, in memory", () => {
  const { gateway, rootKey, keysDeps } = inMemoryStack("webhooks_flow");
  // A second workspace, and a root key of the first that may only read webhooks.
  const rootKeyOf = (id: string, workspaceId: string, permissions: string[]) => {
    const key = `lk_root_${id}_0123456789abcdef`;
    keysDeps.store.putRootKey({
      id: `rk_${id}`,
      workspaceId,
      permissions,
      revokedAt: null,
      hash: hashKey(key),
    });
    return key;
  };
  const other = rootKeyOf("other_ws", "ws_someone_else", ["*"]);
  const reader = rootKeyOf("reader", "ws_webhooks_flow", ["webhook.*.read"]);

  const post = async (operation: string, body: unknown, key = rootKey) => {
    const headers = new Map<string, string>();
    let status = 0;
    let text = "";
    await new Promise<void>((resolve) => {
      gateway.exchange(
        {
          method: "POST",
          url: `/v2/${operation}`,
          authorization: `Bearer ${key}`,
          accept: undefined,
          reply(s, _type, b, h) {
            status = s;
            text = b;
            for (const [k, v] of Object.entries(h ?? {})) headers.set(k, v);
            resolve();
          },
        },
        Buffer.from(JSON.stringify(body)),
      );
    });
    return { status, body: JSON.parse(text) };
  };

  it("refuses a literal private address at create with 400 naming the field and why", async () => {
    const res = await post("webhooks.create", {
      url: "http://169.254.169.254/latest",
      events: ["key.created"],
    });
    expect(res.status).toBe(400);
    expect(res.body.error.detail).toBe(
      "url points at 169.254.169.254 is a link-local address: webhooks are delivered only to public addresses",
    );
    expect(res.body.error.errors.map((e: { location: string }) => e.location)).toEqual(["/body/url"]);
  });

  it("creates, lists, updates and deletes; another workspace sees none of it; a reader may not create", async () => {
    const created = await post("webhooks.create", {
      url: "https://example.com/hook",
      events: ["key.created", "identity.deleted"],
      description: "sync",
    });
    expect(created.status).toBe(200);
    const { webhookId, secret } = created.body.data;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const listed = await post("webhooks.list", {}, reader);
    expect(listed.body.data).toEqual([
      {
        webhookId,
        url: "https://example.com/hook",
        events: ["key.created", "identity.deleted"],
        description: "sync",
        enabled: true,
        disabledReason: null,
        createdAt: Date.UTC(2026, 0, 1),
      },
    ]);
    expect(listed.body.pagination).toEqual({ hasMore: false });
    expect(
      (await post("webhooks.create", { url: "https://e.com", events: ["key.created"] }, reader)).status,
    ).toBe(403);

    expect((await post("webhooks.list", {}, other)).body.data).toEqual([]);
    for (const operation of ["webhooks.update", "webhooks.delete", "webhooks.listDeliveries"]) {
      const res = await post(operation, { webhookId }, other);
      expect([operation, res.status, res.body.error.detail]).toEqual([
        operation,
        404,
        `The webhook '${webhookId}' was not found.`,
      ]);
    }
    expect((await post("webhooks.listDeliveries", { webhookId })).body.data).toEqual([]);

    expect((await post("webhooks.update", { webhookId, enabled: false })).status).toBe(200);
    expect((await post("webhooks.list", {})).body.data[0].enabled).toBe(false);
    expect((await post("webhooks.delete", { webhookId })).body.data).toEqual({});
    expect((await post("webhooks.list", {})).body.data).toEqual([]);
  });
});
