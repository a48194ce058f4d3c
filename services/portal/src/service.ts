import type { ServiceImpl } from "@connectrpc/connect";
import type { PortalService } from "@latchkey/proto/portal/v1/portal_pb";
import { audited, resourcesOf } from "@latchkey/runtime";
import type { PortalDeps } from "./deps.ts";
import { createKey } from "./rpc/createKey.ts";
import { createPortal } from "./rpc/createPortal.ts";
import { createSession } from "./rpc/createSession.ts";
import { deletePortal } from "./rpc/deletePortal.ts";
import { endSession } from "./rpc/endSession.ts";
import { exchangeCode } from "./rpc/exchangeCode.ts";
import { getPortal } from "./rpc/getPortal.ts";
import { getSession } from "./rpc/getSession.ts";
import { getVerifications } from "./rpc/getVerifications.ts";
import { listKeys } from "./rpc/listKeys.ts";
import { listPortals } from "./rpc/listPortals.ts";
import { rerollKey } from "./rpc/rerollKey.ts";
import { revokeSession } from "./rpc/revokeSession.ts";
import { updatePortal } from "./rpc/updatePortal.ts";

/**
 * Every RPC of PortalService; a missing one fails to compile. The root key's changes leave a
 * failure record when refused (audited); a session's acts are recorded by their RPCs, the session
 * as their actor.
 */
export function service(deps: PortalDeps): ServiceImpl<typeof PortalService> {
  return {
    createPortal: audited(
      deps,
      "portals.createPortal",
      (r) => resourcesOf(["api", r.apiId]),
      createPortal(deps),
    ),
    getPortal: getPortal(deps),
    listPortals: listPortals(deps),
    updatePortal: audited(deps, "portals.updatePortal", portalOf, updatePortal(deps)),
    deletePortal: audited(deps, "portals.deletePortal", portalOf, deletePortal(deps)),
    revokeSession: audited(
      deps,
      "portals.revokeSession",
      (r) => resourcesOf(["portal_session", r.sessionId]),
      revokeSession(deps),
    ),
    createSession: audited(deps, "portal.createSession", () => [], createSession(deps)),
    exchangeCode: exchangeCode(deps),
    getSession: getSession(deps),
    endSession: endSession(deps),
    listKeys: listKeys(deps),
    createKey: createKey(deps),
    rerollKey: rerollKey(deps),
    getVerifications: getVerifications(deps),
  };
}

const portalOf = (req: { portalId: string }) => resourcesOf(["portal", req.portalId]);
