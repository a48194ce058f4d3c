import type { ConnectRouter } from "@connectrpc/connect";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import type { KeysDeps } from "./deps.ts";
import { service } from "./service.ts";

/** The one seam: serveRpc in production, createRouterTransport in tests, the all-in-one process alike. */
export function keysRoutes(deps: KeysDeps) {
  return (router: ConnectRouter) => router.service(KeysService, service(deps));
}
