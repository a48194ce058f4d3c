import type { ConnectRouter } from "@connectrpc/connect";
import { AuditService } from "@latchkey/proto/audit/v1/audit_pb";
import { RatelimitPeerService, RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { auditService } from "@latchkey/runtime";
import type { RatelimitDeps } from "./deps.ts";
import { peerService, service } from "./service.ts";

/** One seam for serveRpc in production, createRouterTransport in tests and the all-in-one process. */
export function ratelimitRoutes(deps: RatelimitDeps) {
  return (router: ConnectRouter) => {
    router.service(RatelimitService, service(deps));
    router.service(RatelimitPeerService, peerService(deps));
    // The ratelimit context's audit records (packages/runtime/src/audit.ts), for auditLogs.list.
    router.service(AuditService, auditService(deps.store));
  };
}
