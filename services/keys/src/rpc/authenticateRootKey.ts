import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  AuthenticateRootKeyRequest,
  AuthenticateRootKeyResponseSchema,
} from "@latchkey/proto/keys/v1/keys_pb";
import { domainError, ErrorReason } from "@latchkey/runtime";
import type { KeysDeps } from "../deps.ts";

export function authenticateRootKey(deps: KeysDeps) {
  return async (
    req: AuthenticateRootKeyRequest,
  ): Promise<MessageInitShape<typeof AuthenticateRootKeyResponseSchema>> => {
    const rootKey = req.hash === "" ? undefined : await deps.store.findRootKeyByHash(req.hash);
    if (!rootKey || rootKey.revokedAt !== null) {
      throw domainError(
        ErrorReason.UNAUTHENTICATED,
        "The provided root key is invalid. We could not find the requested key.",
      );
    }
    return {
      caller: { workspaceId: rootKey.workspaceId, rootKeyId: rootKey.id, permissions: rootKey.permissions },
    };
  };
}
