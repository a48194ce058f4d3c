import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed } from "../../schema.ts";
import { WebhookDescription, WebhookEvents, WebhookUrl } from "./shapes.ts";

export const create = route({
  audited: true,
  description:
    "Registers a URL for the event types named. `secret` (`whsec_…`) signs every delivery as the Standard Webhooks specification says (`webhook-id`, `webhook-timestamp`, `webhook-signature`); it is answered this once. A URL must be http or https, carry no credentials, and not point at a loopback, private, link-local or similar address.",
  answer: Closed({
    webhookId: Type.String({ examples: ["wh_2cGKbMxRjIzhCxo1IdjH3a"] }),
    secret: Type.String({ examples: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"] }),
  }),
  example: { url: "https://example.com/latchkey", events: ["key.created", "credits.low"] },
  rootKey: { needs: ["webhook.*.create"] },
  errors: [412],
  schema: Closed({
    url: WebhookUrl(),
    events: WebhookEvents(),
    description: Type.Optional(WebhookDescription()),
    enabled: Type.Optional(Type.Boolean()),
  }),
  async handle(input, { caller, services }) {
    const res = await services.webhooks.createWebhook({
      caller,
      url: input.url,
      events: input.events,
      description: input.description ?? "",
      ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
    });
    return { data: { webhookId: res.webhookId, secret: res.secret } };
  },
});
