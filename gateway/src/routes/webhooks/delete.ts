import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed } from "../../schema.ts";
import { WebhookId } from "./shapes.ts";

export const deleteWebhook = route({
  audited: true,
  description: "Deletes the webhook and its delivery log; deliveries still pending are not sent.",
  answer: Empty,
  example: { webhookId: "wh_2cGKbMxRjIzhCxo1IdjH3a" },
  rootKey: { needs: ["webhook.*.delete"] },
  errors: [404],
  schema: Closed({ webhookId: WebhookId() }),
  async handle(input, { caller, services }) {
    await services.webhooks.deleteWebhook({ caller, webhookId: input.webhookId });
    return { data: {} };
  },
});
