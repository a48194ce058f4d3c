import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";
import { routes } from "../index.ts";

const missingWebhook = () => {
  throw domainError(ErrorReason.WEBHOOK_NOT_FOUND, "The webhook 'wh_2cGKbMxRjIzhCxo1IdjH3a' was not found.");
};

describe("webhooks.* answering 404 for a webhook that is missing or in another workspace", () => {
  it.each(["webhooks.update", "webhooks.delete", "webhooks.listDeliveries", "webhooks.redeliver"] as const)(
    "%s answers data/webhook_not_found",
    async (operation) => {
      const h = harness({
        webhooks: {
          updateWebhook: missingWebhook,
          deleteWebhook: missingWebhook,
          listDeliveries: missingWebhook,
          redeliver: missingWebhook,
        },
      });
      const res = await h.post(operation, routes[operation].example);
      expect(res.status).toBe(404);
      expect(res.body.error).toEqual({
        title: "Not Found",
        detail: "The webhook 'wh_2cGKbMxRjIzhCxo1IdjH3a' was not found.",
        status: 404,
        type: `${DOCS}unkey/data/webhook_not_found`,
      });
    },
  );

  it("webhooks.redeliver answers data/webhook_delivery_not_found for a missing delivery", async () => {
    const h = harness({
      webhooks: {
        redeliver() {
          throw domainError(ErrorReason.WEBHOOK_DELIVERY_NOT_FOUND, "The delivery 'dlv_x' was not found.");
        },
      },
    });
    const res = await h.post("webhooks.redeliver", { webhookId: "wh_1", deliveryId: "dlv_x" });
    expect(res.status).toBe(404);
    expect(res.body.error.type).toBe(`${DOCS}unkey/data/webhook_delivery_not_found`);
  });
});
