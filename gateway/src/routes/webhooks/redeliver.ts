import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed } from "../../schema.ts";
import { WebhookId } from "./shapes.ts";

export const redeliver = route({
  audited: true,
  description:
    "Sends the delivery's event again as a new delivery, now, with the same `webhook-id`, so a receiver that has it already can tell.",
  answer: Closed({ deliveryId: Type.String({ examples: ["dlv_2cGKbMxRjIzhCxo1IdjH3a"] }) }),
  example: { webhookId: "wh_2cGKbMxRjIzhCxo1IdjH3a", deliveryId: "dlv_2cGKbMxRjIzhCxo1IdjH3a" },
  rootKey: { needs: ["webhook.*.update"] },
  errors: [404, 412],
  schema: Closed({ webhookId: WebhookId(), deliveryId: Type.String({ minLength: 1, maxLength: 255 }) }),
  async handle(input, { caller, services }) {
    const res = await services.webhooks.redeliver({
      caller,
      webhookId: input.webhookId,
      deliveryId: input.deliveryId,
    });
    return { data: { deliveryId: res.deliveryId } };
  },
});
