import type { MessageInitShape } from "@bufbuild/protobuf";
import { create, toBinary } from "@bufbuild/protobuf";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import {
  ForwardAuthPoliciesChangedSchema,
  type ForwardAuthPolicySchema,
} from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import {
  type AuditResource,
  domainError,
  ErrorReason,
  invalidInput,
  type PolicyRuleSubject,
  policyRuleViolation,
} from "@latchkey/runtime";
import { visibleApi } from "../access.ts";
import type { KeysDeps } from "../deps.ts";
import type { PolicyRecord } from "../store/forward-auth-policy-store.ts";

/** Most policies a workspace holds, the default among them (docs/limits.md): as many as a policy file's. */
export const MAX_POLICIES_PER_WORKSPACE = 100;

/** Largest definition stored, as JSON (docs/limits.md). */
export const MAX_POLICY_DEFINITION_BYTES = 16 * 1024;

/** Subject of ForwardAuthPoliciesChanged: the gateways drop a workspace's compiled policies on it. */
export const FORWARD_AUTH_POLICIES_CHANGED = "events.keys.forward_auth_policies_changed";

export const policyResource = (id: string): AuditResource => ({ type: "forward_auth_policy", id });

export const policyNotFound = () =>
  domainError(ErrorReason.FORWARD_AUTH_POLICY_NOT_FOUND, "The specified forward-auth policy was not found.");

export const policyNameTaken = (name: string) =>
  domainError(
    ErrorReason.FORWARD_AUTH_POLICY_ALREADY_EXISTS,
    `A forward-auth policy named '${name}' already exists in this workspace.`,
  );

export const policyMessage = (p: PolicyRecord): MessageInitShape<typeof ForwardAuthPolicySchema> => ({
  policyId: p.id,
  position: p.position ?? -1,
  isDefault: p.isDefault,
  definitionJson: p.definitionJson,
  createdAt: BigInt(p.createdAt),
  updatedAt: BigInt(p.updatedAt),
});

/**
 * A definition's name and API, once it keeps the rules beyond the schema (packages/runtime's
 * policyRuleViolation, which the policy file's loader applies too). The gateway checked the
 * definition against the policy file's schema (gateway/src/forward-auth/policy.ts); this service
 * also keeps what it relies on itself: a JSON object of bounded size with a name and an apiId.
 */
export function checkedDefinition(json: string, isDefault: boolean): { name: string; apiId: string } {
  if (Buffer.byteLength(json) > MAX_POLICY_DEFINITION_BYTES) {
    throw invalidInput("/policy", `a policy is at most ${MAX_POLICY_DEFINITION_BYTES} bytes as JSON`);
  }
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw invalidInput("/policy", "the policy is not JSON");
  }
  const name = (value as { name?: unknown } | null)?.name;
  if (typeof value !== "object" || value === null || typeof name !== "string" || name === "") {
    throw invalidInput("/policy/name", "a policy needs a name");
  }
  const apiId = (value as { apiId?: unknown }).apiId;
  if (typeof apiId !== "string" || apiId === "")
    throw invalidInput("/policy/apiId", "a policy needs an apiId");
  const broken = policyRuleViolation(value as PolicyRuleSubject, "/policy", isDefault);
  if (broken) throw invalidInput(broken.location, broken.reason);
  return { name, apiId };
}

/**
 * The policy's API, which must be the caller's: a missing one, a deleted one and another
 * workspace's all answer API_NOT_FOUND word for word (access.ts), as keys.createKey does, so that
 * no workspace learns another's API ids. The policy file's policies are not stored here and are
 * never checked this way.
 */
export async function requirePolicyApi(deps: KeysDeps, caller: Caller, apiId: string): Promise<void> {
  await visibleApi(deps, caller, apiId);
}

/** Tells every gateway that the workspace's policies changed, and answers once it is on its way. */
export function policiesChanged(deps: KeysDeps, workspaceId: string): Promise<void> {
  deps.bus.publish(
    FORWARD_AUTH_POLICIES_CHANGED,
    toBinary(ForwardAuthPoliciesChangedSchema, create(ForwardAuthPoliciesChangedSchema, { workspaceId })),
  );
  return deps.bus.flushed();
}
