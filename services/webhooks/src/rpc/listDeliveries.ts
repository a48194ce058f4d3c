import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  ListDeliveriesRequest,
  ListDeliveriesResponseSchema,
} from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { authenticatedCaller, requirePermissions } from "@latchkey/runtime";
import type { WebhookDeps } from "../deps.ts";
import { cursorOf } from "../store/webhook-store.ts";
import { pageOf, pageResult, statusOf, visibleWebhook } from "../validation.ts";
import { deliveryView } from "../views.ts";

/** webhooks.listDeliveries: newest first, each with its attempts. */
export function listDeliveries(deps: WebhookDeps) {
  return async (
    req: ListDeliveriesRequest,
  ): Promise<MessageInitShape<typeof ListDeliveriesResponseSchema>> => {
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["webhook.*.read"]);
    const page = pageOf(req.page);
    const status = statusOf(req.status);
    await visibleWebhook(deps, caller.workspaceId, req.webhookId);
    const rows = await deps.store.listDeliveries(
      caller.workspaceId,
      req.webhookId,
      { limit: page.limit + 1, after: page.after },
      status,
    );
    const { items, cursor, hasMore } = pageResult(rows, page.limit, cursorOf);
    return { deliveries: items.map(deliveryView), page: { cursor, hasMore } };
  };
}
