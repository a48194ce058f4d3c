import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhookService } from "@latchkey/proto/webhooks/v1/webhooks_pb";
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
    createWebhook: createWebhook(deps),
    listWebhooks: listWebhooks(deps),
    updateWebhook: updateWebhook(deps),
    deleteWebhook: deleteWebhook(deps),
    listDeliveries: listDeliveries(deps),
    redeliver: redeliver(deps),
  };
}
