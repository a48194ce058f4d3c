import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ExchangeCodeRequest, ExchangeCodeResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import { domainError, ErrorReason } from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import { sessionAudit } from "../session.ts";
import { hashOf, newAccessToken } from "../tokens.ts";

/**
 * portal.exchangeCode: the code, once, for the session's access token (kept hashed). A code
 * unknown, used, expired or revoked is one 401. The session lasts its portal's sessionTtlMs from now.
 */
export function exchangeCode(deps: PortalDeps) {
  return async (req: ExchangeCodeRequest): Promise<MessageInitShape<typeof ExchangeCodeResponseSchema>> => {
    const invalid = () =>
      domainError(
        ErrorReason.UNAUTHENTICATED,
        "The code is invalid, expired or already redeemed; ask the application for a new portal link.",
      );
    if (req.code === "" || req.code.length > 255) throw invalid();
    const token = newAccessToken();
    const now = deps.clock.now();
    const session = await deps.store.redeemCode(hashOf(req.code), hashOf(token), now, (s) =>
      sessionAudit(deps, s, "portal.exchangeCode", [], req.requestId),
    );
    if (!session) throw invalid();
    return { accessToken: token, expiresAt: BigInt(session.expiresAt!) };
  };
}
