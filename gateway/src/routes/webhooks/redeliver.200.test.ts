import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/webhooks.redeliver and webhooks.delete answering 200", () => {
  it("redeliver answers the new delivery's id", async () => {
    const h = harness({
      webhooks: {
        redeliver(req) {
          expect([req.webhookId, req.deliveryId]).toEqual(["wh_1", "dlv_1"]);
          return { deliveryId: "dlv_2" };
        },
      },
    });
    const res = await h.post("webhooks.redeliver", { webhookId: "wh_1", deliveryId: "dlv_1" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ deliveryId: "dlv_2" });
  });

  it("delete answers data {}", async () => {
    const h = harness({ webhooks: { deleteWebhook: () => ({}) } });
    const res = await h.post("webhooks.delete", { webhookId: "wh_1" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({});
  });
});
