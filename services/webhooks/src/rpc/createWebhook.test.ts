import { ErrorReason } from "@latchkey/runtime";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, root, WS } from "../../testing/in-memory-webhooks.ts";

describe("CreateWebhook", () => {
  it("answers the id and a whsec_ secret of 32 bytes, once, and keeps the secret only sealed", async () => {
    const { client, deps, all } = harness();
    const res = await client.createWebhook({
      caller: all,
      url: "https://example.com/hook",
      events: ["key.created", "credits.low"],
      description: "billing",
    });
    expect(res.webhookId).toMatch(/^wh_/);
    expect(res.secret).toMatch(/^whsec_/);
    expect(Buffer.from(res.secret.slice(6), "base64")).toHaveLength(32);
    // The secret is usable with the standardwebhooks package as it is.
    expect(() => new Webhook(res.secret)).not.toThrow();
    const stored = await deps.store.findWebhook(WS, res.webhookId);
    expect(stored).toMatchObject({
      url: "https://example.com/hook",
      events: ["key.created", "credits.low"],
      description: "billing",
      enabled: true,
      disabledReason: null,
    });
    expect(stored?.sealedSecret).not.toContain(res.secret.slice(6));
    expect(deps.vault.open(res.webhookId, WS, stored!.sealedSecret)).toBe(res.secret);
    const listed = await client.listWebhooks({ caller: all });
    expect(JSON.stringify(listed, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(
      res.secret.slice(6),
    );
  });

  it("creates a disabled webhook when asked", async () => {
    const { client, deps, all } = harness();
    const { webhookId } = await client.createWebhook({
      caller: all,
      url: "https://example.com/h",
      events: ["key.deleted"],
      enabled: false,
    });
    expect((await deps.store.findWebhook(WS, webhookId))?.enabled).toBe(false);
  });

  it("needs webhook.*.create", async () => {
    const { create } = harness();
    await expectReason(create({ caller: root("webhook.*.read") }), ErrorReason.INSUFFICIENT_PERMISSIONS, {
      message: lacks("webhook.*.create"),
    });
    await expect(create({ caller: root("webhook.*.create") })).resolves.toBeDefined();
  });

  it.each([
    ["ftp://example.com/x", "url must use http or https, not ftp"],
    ["not a url", "url must be an absolute http:// or https:// URL"],
    ["https://user:pw@example.com/x", /must not carry credentials/],
    [`https://example.com/${"a".repeat(2048)}`, "url must be at most 2048 characters, got 2068"],
    [
      "http://127.0.0.1:8080/x",
      "url points at 127.0.0.1 is a loopback address: webhooks are delivered only to public addresses",
    ],
    ["http://10.1.2.3/x", /10\.1\.2\.3 is a private address/],
    ["http://169.254.169.254/latest/meta-data", /169\.254\.169\.254 is a link-local address/],
    ["http://[::1]/x", /::1 is a loopback address/],
    ["http://[::ffff:192.168.0.1]/x", /is a private address/],
    ["http://[fd00::1]/x", /private \(unique local\)/],
    ["http://100.64.0.1/x", /carrier-grade NAT/],
    ["http://0.0.0.0/x", /unspecified/],
    // The URL parser reads these as 127.0.0.1, and so does the check.
    ["http://2130706433/x", /127\.0\.0\.1 is a loopback address/],
    ["http://0x7f.1/x", /127\.0\.0\.1 is a loopback address/],
    ["http://224.0.0.1/x", /multicast/],
    // IPv4-compatible IPv6: the URL parser writes [::127.0.0.1] as [::7f00:1].
    [
      "http://[::127.0.0.1]/x",
      "url points at ::7f00:1 is a deprecated IPv4-compatible IPv6 address: webhooks are delivered only to public addresses",
    ],
    ["http://[::a00:1]/x", /::a00:1 is a deprecated IPv4-compatible IPv6 address/],
    ["http://[fec0::1]/x", /fec0::1 is a site-local \(deprecated\) address/],
  ])("refuses the url %s: 400 saying why", async (url, message) => {
    const { create } = harness();
    await expectReason(create({ url }), ErrorReason.INVALID_INPUT, { message, location: "/url" });
  });

  it("accepts a private literal address when WEBHOOK_ALLOW_PRIVATE_URLS allows it", async () => {
    const { create } = harness({ allowPrivateUrls: true });
    await expect(create({ url: "http://127.0.0.1:9/x" })).resolves.toBeDefined();
  });

  it.each([
    [[], "events must name at least one event type", "/events"],
    [["key.created", "key.exploded"], "'key.exploded' is not an event type", "/events/1"],
    [["key.created", "key.created"], "'key.created' is named twice", "/events/1"],
  ])("refuses the events %j", async (events, message, location) => {
    const { create } = harness();
    await expectReason(create({ events }), ErrorReason.INVALID_INPUT, { message, location });
  });

  it("refuses a description over 255 characters", async () => {
    const { client, all } = harness();
    await expectReason(
      client.createWebhook({
        caller: all,
        url: "https://e.com",
        events: ["key.created"],
        description: "d".repeat(256),
      }),
      ErrorReason.INVALID_INPUT,
      { message: "description must be at most 255 characters, got 256", location: "/description" },
    );
  });

  it("refuses the 21st webhook of a workspace with 412, and counts each workspace apart", async () => {
    const { create } = harness();
    for (let i = 0; i < 20; i++) await create();
    await expectReason(create(), ErrorReason.PRECONDITION_FAILED, {
      message: "The workspace already has 20 webhooks, the most it may have; delete one first.",
    });
    await expect(create({ caller: { ...root("*"), workspaceId: "ws_elsewhere" } })).resolves.toBeDefined();
  });
});
