import type { ConnectRouter } from "@connectrpc/connect";
import { AuditService } from "@latchkey/proto/audit/v1/audit_pb";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { auditService } from "@latchkey/runtime";
import type { KeysDeps } from "./deps.ts";
import { service } from "./service.ts";

/** The one seam: serveRpc in production, createRouterTransport in tests, the all-in-one process alike. */
export function keysRoutes(deps: KeysDeps) {
  return (router: ConnectRouter) => {
    router.service(KeysService, service(deps));
    // The keys context's audit records (packages/runtime/src/audit.ts), for auditLogs.list.
    router.service(AuditService, auditService(deps.store));
  };
}
