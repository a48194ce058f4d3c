import type { HandlerContext } from "@connectrpc/connect";
import type { VerifyKeyBatchRequest, VerifyKeyBatchResponse } from "@latchkey/proto/keys/v1/keys_pb";
import type { KeysDeps } from "../deps.ts";
import { verifyBatch } from "../verify/batch.ts";

/** Many verifications in one call (the gateway coalesces concurrent requests): verify/batch.ts. */
export function verifyKeyBatch(deps: KeysDeps) {
  return (req: VerifyKeyBatchRequest, ctx?: HandlerContext): Promise<VerifyKeyBatchResponse> =>
    verifyBatch(deps, req, ctx);
}
