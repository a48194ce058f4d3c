import type { MessageInitShape } from "@bufbuild/protobuf";
import type { EndSessionRequest, EndSessionResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import type { PortalDeps } from "../deps.ts";
import { liveSession, sessionAudit } from "../session.ts";

/** portal.endSession: the end user leaves; the token stops working at once. */
export function endSession(deps: PortalDeps) {
  return async (req: EndSessionRequest): Promise<MessageInitShape<typeof EndSessionResponseSchema>> => {
    const { session, requestId } = await liveSession(deps, req.auth);
    await deps.store.revokeSession(
      session.workspaceId,
      session.id,
      deps.clock.now(),
      sessionAudit(deps, session, "portal.endSession", [], requestId),
    );
    return {};
  };
}
