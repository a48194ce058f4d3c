import { Type } from "@sinclair/typebox";
import { pagination } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, pageFields } from "../../schema.ts";
import { WebhookAnswer, webhookData } from "./shapes.ts";

export const list = route({
  description:
    "The workspace's webhooks by id, without their secrets. `disabledReason` says why one was disabled automatically.",
  answer: Type.Array(WebhookAnswer),
  paginated: true,
  example: {},
  rootKey: { needs: ["webhook.*.read"] },
  schema: Closed({ limit: pageFields.limit, cursor: pageFields.cursor }),
  async handle(input, { caller, services }) {
    const res = await services.webhooks.listWebhooks({
      caller,
      page: { limit: input.limit ?? 100, cursor: input.cursor ?? "" },
    });
    return { data: res.webhooks.map(webhookData), pagination: pagination(res.page) };
  },
});
