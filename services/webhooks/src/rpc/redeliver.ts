import type { MessageInitShape } from "@bufbuild/protobuf";
import type { RedeliverRequest, RedeliverResponseSchema } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import {
  auditSuccess,
  authenticatedCaller,
  domainError,
  ErrorReason,
  newId,
  requirePermissions,
} from "@latchkey/runtime";
import type { WebhookDeps } from "../deps.ts";
import { OUTBOX_FULL } from "../store/webhook-store.ts";
import { deliveryNotFound, visibleWebhook } from "../validation.ts";

/**
 * webhooks.redeliver: a new delivery of the same event, due after the retry schedule's first wait, with the same webhook-id (the
 * event's id), so a receiver that already has it can tell. A disabled webhook's waits until it is
 * enabled again.
 */
export function redeliver(deps: WebhookDeps) {
  return async (req: RedeliverRequest): Promise<MessageInitShape<typeof RedeliverResponseSchema>> => {
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["webhook.*.update"]);
    await visibleWebhook(deps, caller.workspaceId, req.webhookId);
    if (req.deliveryId === "" || req.deliveryId.length > 255) throw deliveryNotFound(req.deliveryId);
    const made = newId("dlv");
    const now = deps.clock.now();
    const id = await deps.store.redeliver(
      caller.workspaceId,
      req.webhookId,
      req.deliveryId,
      made,
      now,
      auditSuccess(
        caller,
        caller.workspaceId,
        "webhooks.redeliver",
        [
          { type: "webhook", id: req.webhookId },
          { type: "delivery", id: req.deliveryId },
          { type: "delivery", id: made },
        ],
        [],
        now,
      ),
      deps.settings.retryScheduleMs[0],
      deps.settings.maxPendingPerWorkspace,
    );
    if (id === undefined) throw deliveryNotFound(req.deliveryId);
    if (id === OUTBOX_FULL) {
      throw domainError(
        ErrorReason.PRECONDITION_FAILED,
        `The workspace already has ${deps.settings.maxPendingPerWorkspace} deliveries waiting, the most it may have; redeliver once some are sent.`,
      );
    }
    return { deliveryId: id };
  };
}
