import type { VerifyKeyRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { authenticatedCaller } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import { type VerifyKeyResult, verify } from "../verify/verify.ts";

/** One verification; how a key is judged lives in verify/ (verify.ts). */
export function verifyKey(deps: KeysDeps) {
  return (req: VerifyKeyRequest): Promise<VerifyKeyResult> => verify(deps, authenticatedCaller(req), req);
}
