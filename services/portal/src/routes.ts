import type { ConnectRouter } from "@connectrpc/connect";
import { AuditService } from "@latchkey/proto/audit/v1/audit_pb";
import { PortalService } from "@latchkey/proto/portal/v1/portal_pb";
import { auditService } from "@latchkey/runtime";
import type { PortalDeps } from "./deps.ts";
import { service } from "./service.ts";

/** The one seam: served by serveRpc in production, by createRouterTransport in tests and the one-process start. */
export function portalRoutes(deps: PortalDeps) {
  return (router: ConnectRouter) => {
    router.service(PortalService, service(deps));
    // The portal context's audit records (packages/runtime/src/audit.ts), for auditLogs.list.
    router.service(AuditService, auditService(deps.store));
  };
}
