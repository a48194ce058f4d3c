import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  CreateWebhookRequest,
  CreateWebhookResponseSchema,
} from "@latchkey/proto/webhooks/v1/webhooks_pb";
import {
  auditSuccess,
  authenticatedCaller,
  domainError,
  ErrorReason,
  newId,
  requirePermissions,
} from "@latchkey/runtime";
import type { WebhookDeps } from "../deps.ts";
import { newSigningSecret } from "../secret.ts";
import { descriptionOf, eventsOf, urlOf } from "../validation.ts";

/**
 * webhooks.create: the signing secret is answered this once and kept only sealed. The audit record
 * names the fields set, never their values (the URL may carry a token in its path or query).
 */
export function createWebhook(deps: WebhookDeps) {
  return async (req: CreateWebhookRequest): Promise<MessageInitShape<typeof CreateWebhookResponseSchema>> => {
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["webhook.*.create"]);
    const url = urlOf(req.url, deps);
    const events = eventsOf(req.events);
    const description = descriptionOf(req.description);
    const id = newId("wh");
    const secret = newSigningSecret();
    const now = deps.clock.now();
    const max = deps.settings.maxWebhooksPerWorkspace;
    const created = await deps.store.createWebhook(
      {
        id,
        workspaceId: caller.workspaceId,
        url,
        events,
        description,
        enabled: req.enabled ?? true,
        disabledReason: null,
        sealedSecret: deps.vault.seal(id, caller.workspaceId, secret),
        consecutiveFailures: 0,
        createdAt: now,
        updatedAt: now,
      },
      max,
      auditSuccess(
        caller,
        caller.workspaceId,
        "webhooks.create",
        [{ type: "webhook", id }],
        [
          "url",
          "events",
          ...(description !== "" ? ["description"] : []),
          ...(req.enabled !== undefined ? ["enabled"] : []),
        ],
        now,
      ),
    );
    if (!created) {
      throw domainError(
        ErrorReason.PRECONDITION_FAILED,
        `The workspace already has ${max} webhooks, the most it may have; delete one first.`,
      );
    }
    return { webhookId: id, secret };
  };
}
