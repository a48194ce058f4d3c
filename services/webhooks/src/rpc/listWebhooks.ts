import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  ListWebhooksRequest,
  ListWebhooksResponseSchema,
} from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { authenticatedCaller, requirePermissions } from "@latchkey/runtime";
import type { WebhookDeps } from "../deps.ts";
import { pageOf, pageResult } from "../validation.ts";
import { webhookView } from "../views.ts";

export function listWebhooks(deps: WebhookDeps) {
  return async (req: ListWebhooksRequest): Promise<MessageInitShape<typeof ListWebhooksResponseSchema>> => {
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["webhook.*.read"]);
    const page = pageOf(req.page);
    const rows = await deps.store.listWebhooks(caller.workspaceId, {
      limit: page.limit + 1,
      after: page.after,
    });
    const { items, cursor, hasMore } = pageResult(rows, page.limit, (w) => w.id);
    return { webhooks: items.map(webhookView), page: { cursor, hasMore } };
  };
}
