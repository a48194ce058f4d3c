import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  UpdateForwardAuthPolicyRequest,
  UpdateForwardAuthPolicyResponseSchema,
} from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { invalidInput, requirePermissions, succeeded } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import {
  checkedDefinition,
  policiesChanged,
  policyMessage,
  policyNameTaken,
  policyNotFound,
  policyResource,
  requirePolicyApi,
} from "./forward-auth-policies.ts";

export function updateForwardAuthPolicy(deps: KeysDeps) {
  return async (
    req: UpdateForwardAuthPolicyRequest,
  ): Promise<MessageInitShape<typeof UpdateForwardAuthPolicyResponseSchema>> => {
    const caller = authenticatedCaller(req);
    if (req.policyId === "") throw invalidInput("/policyId", "policyId is required");
    requirePermissions(caller, ["forward_auth.*.update_policy"]);
    if (req.position !== undefined && req.position < 0) {
      throw invalidInput("/position", "position must be 0 or more");
    }
    if (req.definitionJson === undefined && req.position === undefined) {
      // Nothing to change: the policy as it is, with no record and no announcement.
      const p = await deps.policies.find(caller.workspaceId, req.policyId);
      if (p === undefined) throw policyNotFound();
      return { policy: policyMessage(p) };
    }
    // Whether it is the default decides which rules its definition keeps.
    const current =
      req.definitionJson === undefined
        ? undefined
        : await deps.policies.find(caller.workspaceId, req.policyId);
    if (req.definitionJson !== undefined && current === undefined) throw policyNotFound();
    const checked =
      req.definitionJson === undefined
        ? undefined
        : checkedDefinition(req.definitionJson, current!.isDefault);
    if (checked !== undefined) await requirePolicyApi(deps, caller, checked.apiId);
    const name = checked?.name;
    const fields = [
      ...(req.definitionJson === undefined ? [] : ["policy"]),
      ...(req.position === undefined ? [] : ["position"]),
    ];
    const updated = await deps.policies.update(
      caller.workspaceId,
      req.policyId,
      {
        ...(name === undefined ? {} : { name }),
        ...(req.definitionJson === undefined ? {} : { definitionJson: req.definitionJson }),
        ...(req.position === undefined ? {} : { position: req.position }),
      },
      deps.clock.now(),
      succeeded(deps, caller, "forwardAuth.updatePolicy", [policyResource(req.policyId)], fields),
    );
    if (updated === undefined) throw policyNotFound();
    if (updated === "name taken") throw policyNameTaken(name!);
    await policiesChanged(deps, caller.workspaceId);
    return { policy: policyMessage(updated) };
  };
}
