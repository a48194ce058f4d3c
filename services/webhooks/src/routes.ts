import type { ConnectRouter } from "@connectrpc/connect";
import { AuditService } from "@latchkey/proto/audit/v1/audit_pb";
import { WebhookService } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import { auditService } from "@latchkey/runtime";
import type { WebhookDeps } from "./deps.ts";
import { service } from "./service.ts";

/** The one seam: served by serveRpc in production, by createRouterTransport in tests and the one-process start. */
export function webhookRoutes(deps: WebhookDeps) {
  return (router: ConnectRouter) => {
    router.service(WebhookService, service(deps));
    // The webhooks context's audit records (packages/runtime/src/audit.ts), for auditLogs.list.
    router.service(AuditService, auditService(deps.store));
  };
}
