import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  ListForwardAuthPoliciesRequest,
  ListForwardAuthPoliciesResponseSchema,
} from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { requirePermissions } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import { MAX_POLICIES_PER_WORKSPACE, policyMessage } from "./forward-auth-policies.ts";

export function listForwardAuthPolicies(deps: KeysDeps) {
  return async (
    req: ListForwardAuthPoliciesRequest,
  ): Promise<MessageInitShape<typeof ListForwardAuthPoliciesResponseSchema>> => {
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["forward_auth.*.read_policy"]);
    const limit = Math.max(1, Math.min(req.limit || MAX_POLICIES_PER_WORKSPACE, MAX_POLICIES_PER_WORKSPACE));
    // One more than asked for says whether there is another page.
    const rows = await deps.policies.list(caller.workspaceId, req.after, limit + 1);
    return { policies: rows.slice(0, limit).map(policyMessage), hasMore: rows.length > limit };
  };
}
