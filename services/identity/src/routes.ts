import type { ConnectRouter } from "@connectrpc/connect";
import { AuditService } from "@latchkey/proto/audit/v1/audit_pb";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { auditService } from "@latchkey/runtime";
import type { IdentityDeps } from "./deps.ts";
import { service } from "./service.ts";

/** The one seam: served by serveRpc in production, by createRouterTransport in tests and the one-process start. */
export function identityRoutes(deps: IdentityDeps) {
  return (router: ConnectRouter) => {
    router.service(IdentityService, service(deps));
    // The identity context's audit records (packages/runtime/src/audit.ts), for auditLogs.list.
    router.service(AuditService, auditService(deps.store));
  };
}
