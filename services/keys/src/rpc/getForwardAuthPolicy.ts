import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  GetForwardAuthPolicyRequest,
  GetForwardAuthPolicyResponseSchema,
} from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { invalidInput, requirePermissions } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import { policyMessage, policyNotFound } from "./forward-auth-policies.ts";

export function getForwardAuthPolicy(deps: KeysDeps) {
  return async (
    req: GetForwardAuthPolicyRequest,
  ): Promise<MessageInitShape<typeof GetForwardAuthPolicyResponseSchema>> => {
    const caller = authenticatedCaller(req);
    if (req.policyId === "") throw invalidInput("/policyId", "policyId is required");
    requirePermissions(caller, ["forward_auth.*.read_policy"]);
    const p = await deps.policies.find(caller.workspaceId, req.policyId);
    if (p === undefined) throw policyNotFound();
    return { policy: policyMessage(p) };
  };
}
