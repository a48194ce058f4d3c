import { Type } from "@sinclair/typebox";
import { pagination } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, Enum, pageFields } from "../../schema.ts";
import { DeliveryAnswer, deliveryData, WebhookId } from "./shapes.ts";

export const listDeliveries = route({
  description:
    "A webhook's deliveries, newest first, each with every attempt (time, status code, latency, error). Delivered and failed deliveries are kept 30 days by default.",
  answer: Type.Array(DeliveryAnswer),
  paginated: true,
  example: { webhookId: "wh_2cGKbMxRjIzhCxo1IdjH3a", status: "failed" },
  rootKey: { needs: ["webhook.*.read"] },
  errors: [404],
  schema: Closed({
    webhookId: WebhookId(),
    limit: pageFields.limit,
    cursor: pageFields.cursor,
    status: Type.Optional(Enum(["pending", "delivered", "failed"] as const)),
  }),
  async handle(input, { caller, services }) {
    const res = await services.webhooks.listDeliveries({
      caller,
      webhookId: input.webhookId,
      page: { limit: input.limit ?? 100, cursor: input.cursor ?? "" },
      status: input.status ?? "",
    });
    return { data: res.deliveries.map(deliveryData), pagination: pagination(res.page) };
  },
});
