import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhookService } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { audited, resourcesOf } from "@latchkey/runtime";
import type { WebhookDeps } from "./deps.ts";
import { createWebhook } from "./rpc/createWebhook.ts";
import { deleteWebhook } from "./rpc/deleteWebhook.ts";
import { listDeliveries } from "./rpc/listDeliveries.ts";
import { listWebhooks } from "./rpc/listWebhooks.ts";
import { redeliver } from "./rpc/redeliver.ts";
import { updateWebhook } from "./rpc/updateWebhook.ts";

/** Every RPC of WebhookService; a missing one fails to compile. */
export function service(deps: WebhookDeps): ServiceImpl<typeof WebhookService> {
  return {
    createWebhook: audited(deps, "webhooks.create", () => [], createWebhook(deps)),
    listWebhooks: listWebhooks(deps),
    updateWebhook: audited(deps, "webhooks.update", webhookOf, updateWebhook(deps)),
    deleteWebhook: audited(deps, "webhooks.delete", webhookOf, deleteWebhook(deps)),
    listDeliveries: listDeliveries(deps),
    redeliver: audited(
      deps,
      "webhooks.redeliver",
      (req) => resourcesOf(["webhook", req.webhookId], ["delivery", req.deliveryId]),
      redeliver(deps),
    ),
  };
}

const webhookOf = (req: { webhookId: string }) => resourcesOf(["webhook", req.webhookId]);
