import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GetSessionRequest, GetSessionResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import type { PortalDeps } from "../deps.ts";
import { liveSession, portalView } from "../session.ts";

/** portal.getSession: the session and its portal, what the portal's page shows first. */
export function getSession(deps: PortalDeps) {
  return async (req: GetSessionRequest): Promise<MessageInitShape<typeof GetSessionResponseSchema>> => {
    const { session, portal } = await liveSession(deps, req.auth);
    return {
      session: {
        id: session.id,
        portal: portalView(portal),
        externalId: session.externalId,
        scopes: session.scopes,
        ...(session.returnUrl !== null ? { returnUrl: session.returnUrl } : {}),
        expiresAt: BigInt(session.expiresAt!),
        preview: session.preview,
      },
    };
  };
}
