import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  UpdateWebhookRequest,
  UpdateWebhookResponseSchema,
} from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { auditSuccess, authenticatedCaller, requirePermissions } from "@latchkey/runtime";
import type { WebhookDeps } from "../deps.ts";
import { descriptionOf, eventsOf, urlOf, visibleWebhook, webhookNotFound } from "../validation.ts";

/** webhooks.update: enabling clears why it was disabled and its run of failures. */
export function updateWebhook(deps: WebhookDeps) {
  return async (req: UpdateWebhookRequest): Promise<MessageInitShape<typeof UpdateWebhookResponseSchema>> => {
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["webhook.*.update"]);
    const update = {
      ...(req.url !== undefined ? { url: urlOf(req.url, deps) } : {}),
      ...(req.events !== undefined ? { events: eventsOf(req.events.events) } : {}),
      ...(req.description !== undefined ? { description: descriptionOf(req.description) } : {}),
      ...(req.enabled !== undefined ? { enabled: req.enabled } : {}),
      updatedAt: deps.clock.now(),
    };
    await visibleWebhook(deps, caller.workspaceId, req.webhookId);
    // Names of what was set, never their values.
    const fields = (["url", "events", "description", "enabled"] as const).filter((f) => f in update);
    const audit = auditSuccess(
      caller,
      caller.workspaceId,
      "webhooks.update",
      [{ type: "webhook", id: req.webhookId }],
      fields,
      update.updatedAt,
    );
    if (!(await deps.store.updateWebhook(caller.workspaceId, req.webhookId, update, audit))) {
      throw webhookNotFound(req.webhookId);
    }
    return {};
  };
}
