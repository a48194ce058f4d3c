import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  DeleteWebhookRequest,
  DeleteWebhookResponseSchema,
} from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { auditSuccess, authenticatedCaller, requirePermissions } from "@latchkey/runtime";
import type { WebhookDeps } from "../deps.ts";
import { visibleWebhook, webhookNotFound } from "../validation.ts";

/** webhooks.delete: the webhook and its delivery log go; pending deliveries are not sent. */
export function deleteWebhook(deps: WebhookDeps) {
  return async (req: DeleteWebhookRequest): Promise<MessageInitShape<typeof DeleteWebhookResponseSchema>> => {
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["webhook.*.delete"]);
    await visibleWebhook(deps, caller.workspaceId, req.webhookId);
    const audit = auditSuccess(
      caller,
      caller.workspaceId,
      "webhooks.delete",
      [{ type: "webhook", id: req.webhookId }],
      [],
      deps.clock.now(),
    );
    if (!(await deps.store.deleteWebhook(caller.workspaceId, req.webhookId, audit)))
      throw webhookNotFound(req.webhookId);
    return {};
  };
}
