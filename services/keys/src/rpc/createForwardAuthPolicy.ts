import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  CreateForwardAuthPolicyRequest,
  CreateForwardAuthPolicyResponseSchema,
} from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import {
  domainError,
  ErrorReason,
  invalidInput,
  newId,
  requirePermissions,
  succeeded,
} from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import {
  checkedDefinition,
  MAX_POLICIES_PER_WORKSPACE,
  policiesChanged,
  policyNameTaken,
  policyResource,
  requirePolicyApi,
} from "./forward-auth-policies.ts";

export function createForwardAuthPolicy(deps: KeysDeps) {
  return async (
    req: CreateForwardAuthPolicyRequest,
  ): Promise<MessageInitShape<typeof CreateForwardAuthPolicyResponseSchema>> => {
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["forward_auth.*.create_policy"]);
    const { name, apiId } = checkedDefinition(req.definitionJson, req.isDefault);
    if (req.position !== undefined && req.position < 0) {
      throw invalidInput("/position", "position must be 0 or more");
    }
    await requirePolicyApi(deps, caller, apiId);
    const id = newId("fap");
    const made = await deps.policies.create(
      {
        id,
        workspaceId: caller.workspaceId,
        name,
        isDefault: req.isDefault,
        definitionJson: req.definitionJson,
        createdAt: deps.clock.now(),
      },
      req.position,
      MAX_POLICIES_PER_WORKSPACE,
      succeeded(deps, caller, "forwardAuth.createPolicy", [policyResource(id)], ["name"]),
    );
    if (made === "name taken") throw policyNameTaken(name);
    if (made === "default taken") {
      throw domainError(
        ErrorReason.FORWARD_AUTH_POLICY_ALREADY_EXISTS,
        "This workspace already has a default policy: update it, or delete it first.",
      );
    }
    if (made === "full") {
      throw domainError(
        ErrorReason.PRECONDITION_FAILED,
        `A workspace holds at most ${MAX_POLICIES_PER_WORKSPACE} forward-auth policies: delete one first.`,
      );
    }
    await policiesChanged(deps, caller.workspaceId);
    return { policyId: id, position: made.position ?? -1 };
  };
}
