import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  DeleteForwardAuthPolicyRequest,
  DeleteForwardAuthPolicyResponseSchema,
} from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { invalidInput, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import { policiesChanged, policyNotFound, policyResource } from "./forward-auth-policies.ts";

export function deleteForwardAuthPolicy(deps: KeysDeps) {
  return async (
    req: DeleteForwardAuthPolicyRequest,
  ): Promise<MessageInitShape<typeof DeleteForwardAuthPolicyResponseSchema>> => {
    const caller = authenticatedCaller(req);
    if (req.policyId === "") throw invalidInput("/policyId", "policyId is required");
    requirePermissions(caller, ["forward_auth.*.delete_policy"]);
    const deleted = await deps.policies.delete(
      caller.workspaceId,
      req.policyId,
      succeeded(deps, caller, "forwardAuth.deletePolicy", [policyResource(req.policyId)]),
    );
    if (!deleted) throw policyNotFound();
    await policiesChanged(deps, caller.workspaceId);
    return {};
  };
}
