import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  LoadForwardAuthPoliciesRequest,
  LoadForwardAuthPoliciesResponseSchema,
} from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { domainError, ErrorReason, holds } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import { MAX_POLICIES_PER_WORKSPACE, policyMessage } from "./forward-auth-policies.ts";

/**
 * The gateway's forward-auth cache: all of the workspace's policies at once (they are bounded),
 * for a proxy's root key that may verify through at least one of them, or that may read them.
 */
export function loadForwardAuthPolicies(deps: KeysDeps) {
  return async (
    req: LoadForwardAuthPoliciesRequest,
  ): Promise<MessageInitShape<typeof LoadForwardAuthPoliciesResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const rows = await deps.policies.list(caller.workspaceId, undefined, MAX_POLICIES_PER_WORKSPACE);
    const may =
      holds(caller.permissions, "forward_auth.*.read_policy") ||
      rows.some((p) => holds(caller.permissions, `forward_auth.${p.name}.verify`));
    if (!may && rows.length > 0) {
      throw domainError(
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        "The root key may verify through none of this workspace's forward-auth policies.",
      );
    }
    return { policies: rows.map(policyMessage) };
  };
}
