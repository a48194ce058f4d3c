import { Type } from "@sinclair/typebox";
import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed } from "../../schema.ts";
import { WebhookDescription, WebhookEvents, WebhookId, WebhookUrl } from "./shapes.ts";

export const update = route({
  audited: true,
  description:
    "Changes the fields given. `enabled: true` also clears `disabledReason` and the run of failures.",
  answer: Empty,
  example: { webhookId: "wh_2cGKbMxRjIzhCxo1IdjH3a", enabled: true },
  rootKey: { needs: ["webhook.*.update"] },
  errors: [404],
  schema: Closed({
    webhookId: WebhookId(),
    url: Type.Optional(WebhookUrl()),
    events: Type.Optional(WebhookEvents()),
    description: Type.Optional(WebhookDescription()),
    enabled: Type.Optional(Type.Boolean()),
  }),
  async handle(input, { caller, services }) {
    await services.webhooks.updateWebhook({
      caller,
      webhookId: input.webhookId,
      ...(input.url !== undefined ? { url: input.url } : {}),
      ...(input.events !== undefined ? { events: { events: input.events } } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
    });
    return { data: {} };
  },
});
