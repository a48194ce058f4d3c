import type { MessageInitShape } from "@bufbuild/protobuf";
import type { RevokeSessionRequest, RevokeSessionResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import { authenticatedCaller, holds, succeeded } from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import { sessionNotFound } from "../validation.ts";

/**
 * portals.revokeSession: needs `portal.<portalId>.revoke_portal_session` on the session's portal;
 * without it the session answers as a missing one. Revoking a revoked session changes nothing.
 */
export function revokeSession(deps: PortalDeps) {
  return async (req: RevokeSessionRequest): Promise<MessageInitShape<typeof RevokeSessionResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const session = await deps.store.findSession(caller.workspaceId, req.sessionId);
    if (!session || !holds(caller.permissions, `portal.${session.portalId}.revoke_portal_session`)) {
      throw sessionNotFound(req.sessionId);
    }
    if (session.revokedAt !== null) return {};
    await deps.store.revokeSession(
      caller.workspaceId,
      session.id,
      deps.clock.now(),
      succeeded(deps, caller, "portals.revokeSession", [
        { type: "portal", id: session.portalId },
        { type: "portal_session", id: session.id },
      ]),
    );
    return {};
  };
}
