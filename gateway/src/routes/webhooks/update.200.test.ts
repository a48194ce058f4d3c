import type { UpdateWebhookRequest } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/webhooks.update answering 200", () => {
  it("forwards only the fields given and answers data {}", async () => {
    const seen: UpdateWebhookRequest[] = [];
    const h = harness({
      webhooks: {
        updateWebhook(req) {
          seen.push(req);
          return {};
        },
      },
    });
    const res = await h.post("webhooks.update", {
      webhookId: "wh_1",
      enabled: true,
      events: ["key.deleted"],
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({});
    expect([
      seen[0]?.webhookId,
      seen[0]?.enabled,
      seen[0]?.events?.events,
      seen[0]?.url,
      seen[0]?.description,
    ]).toEqual(["wh_1", true, ["key.deleted"], undefined, undefined]);
  });
});
