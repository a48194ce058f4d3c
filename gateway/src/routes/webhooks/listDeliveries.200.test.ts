import type { ListDeliveriesRequest } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/webhooks.listDeliveries answering 200", () => {
  it("answers each delivery with its attempts, nulls where nothing is known, and pagination", async () => {
    const seen: ListDeliveriesRequest[] = [];
    const h = harness({
      webhooks: {
        listDeliveries(req) {
          seen.push(req);
          return {
            deliveries: [
              {
                id: "dlv_2",
                eventId: "evt_2",
                eventType: "key.created",
                status: "pending",
                createdAt: 10n,
                nextAttemptAt: 5_010n,
                attempts: [{ attemptedAt: 10n, statusCode: 500, latencyMs: 7n, error: "answered 500" }],
              },
              {
                id: "dlv_1",
                eventId: "evt_1",
                eventType: "key.deleted",
                status: "delivered",
                createdAt: 5n,
                deliveredAt: 6n,
                attempts: [{ attemptedAt: 6n, statusCode: 200, latencyMs: 3n }],
              },
            ],
            page: { cursor: "", hasMore: false },
          };
        },
      },
    });
    const res = await h.post("webhooks.listDeliveries", { webhookId: "wh_1", status: "pending", limit: 5 });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      {
        deliveryId: "dlv_2",
        eventId: "evt_2",
        eventType: "key.created",
        status: "pending",
        createdAt: 10,
        nextAttemptAt: 5_010,
        deliveredAt: null,
        attempts: [{ attemptedAt: 10, statusCode: 500, latencyMs: 7, error: "answered 500" }],
      },
      {
        deliveryId: "dlv_1",
        eventId: "evt_1",
        eventType: "key.deleted",
        status: "delivered",
        createdAt: 5,
        nextAttemptAt: null,
        deliveredAt: 6,
        attempts: [{ attemptedAt: 6, statusCode: 200, latencyMs: 3, error: null }],
      },
    ]);
    expect(res.body.pagination).toEqual({ hasMore: false });
    expect([seen[0]?.webhookId, seen[0]?.status, seen[0]?.page?.limit]).toEqual(["wh_1", "pending", 5]);
  });

  it("refuses an unknown status with 400", async () => {
    const res = await harness().post("webhooks.listDeliveries", { webhookId: "wh_1", status: "lost" });
    expect(res.status).toBe(400);
    expect(res.body.error.errors[0].location).toBe("/body/status");
  });
});
