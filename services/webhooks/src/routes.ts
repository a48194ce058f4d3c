import type { ConnectRouter } from "@connectrpc/connect";
import { WebhookService } from "@latchkey/proto/webhooks/v1/webhooks_pb";
import type { WebhookDeps } from "./deps.ts";
import { service } from "./service.ts";

/** The one seam: served by serveRpc in production, by createRouterTransport in tests and the one-process start. */
export function webhookRoutes(deps: WebhookDeps) {
  return (router: ConnectRouter) => router.service(WebhookService, service(deps));
}
