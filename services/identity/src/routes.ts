import type { ConnectRouter } from "@connectrpc/connect";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import type { IdentityDeps } from "./deps.ts";
import { service } from "./service.ts";

/** The one seam: served by serveRpc in production, by createRouterTransport in tests and the one-process start. */
export function identityRoutes(deps: IdentityDeps) {
  return (router: ConnectRouter) => router.service(IdentityService, service(deps));
}
