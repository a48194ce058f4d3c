import type { CreateWebhookRequest } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/webhooks.create answering 200", () => {
  it("forwards url, events, description and enabled, and answers the id and the secret", async () => {
    const seen: CreateWebhookRequest[] = [];
    const h = harness({
      webhooks: {
        createWebhook(req) {
          seen.push(req);
          return { webhookId: "wh_1", secret: "whsec_c2VjcmV0" };
        },
      },
    });
    const res = await h.post("webhooks.create", {
      url: "https://example.com/hook",
      events: ["key.created", "credits.low"],
      description: "billing",
      enabled: false,
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ webhookId: "wh_1", secret: "whsec_c2VjcmV0" });
    expect(seen.map((r) => [r.url, r.events, r.description, r.enabled])).toEqual([
      ["https://example.com/hook", ["key.created", "credits.low"], "billing", false],
    ]);
    await h.post("webhooks.create", { url: "https://example.com/hook", events: ["key.created"] });
    expect([seen[1]?.description, seen[1]?.enabled]).toEqual(["", undefined]);
  });
});
