import type { ForwardAuthPolicy } from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { type Static, Type } from "@sinclair/typebox";
import { PolicyError, type PolicyInput, PolicySchema, PolicySet } from "../../forward-auth/policy.ts";
import { problems } from "../../problem.ts";
import { Closed } from "../../schema.ts";

/**
 * The body's policy: the policy file's own schema (forward-auth/policy.ts), so that the API and
 * the file hold one definition, checked by the same rules beyond the schema (PolicySet.from).
 */
export const BodyPolicy = PolicySchema;

/** A policy as the operations answer it: its id, its place in match order, its definition. */
export const StoredPolicy = Closed({
  policyId: Type.String({ examples: ["fap_4kLm9QzT2xWvB8nE"] }),
  /** From 0 in match order; absent for the default, which comes after every other. */
  position: Type.Optional(Type.Integer({ minimum: 0 })),
  default: Type.Boolean(),
  policy: Type.Unsafe<PolicyInput>({
    ...PolicySchema,
    examples: [{ name: "orders", paths: ["/v1/orders/**"], methods: ["GET"], apiId: "api_123" }],
  }),
  createdAt: Type.Integer(),
  updatedAt: Type.Integer(),
});

export type StoredPolicyData = Static<typeof StoredPolicy>;

/**
 * The definition as the keys service stores it (JSON), once the file's rules beyond the schema
 * hold: 400 at /body/policy/... otherwise. A default covers what no other policy matches, so it
 * names no hosts, paths or methods.
 */
export function definitionJson(policy: PolicyInput, isDefault: boolean): string {
  if (isDefault) {
    for (const field of ["hosts", "paths", "methods"] as const) {
      if (policy[field] !== undefined) {
        throw problems.invalidInput("The default policy matches every request no other policy matches.", [
          {
            location: `/body/policy/${field}`,
            message: `a default policy has no ${field}`,
            fix: `Remove ${field}, or create the policy without default.`,
          },
        ]);
      }
    }
  }
  try {
    PolicySet.from(isDefault ? { policies: [], default: policy } : { policies: [policy] });
  } catch (err) {
    if (!(err instanceof PolicyError)) throw err;
    const location = `/body/policy${err.location.replace(/^\/(policies\/0|default)/, "")}`;
    throw problems.invalidInput(err.reason, [{ location, message: err.reason }]);
  }
  return JSON.stringify(policy);
}

export function storedPolicyData(p: ForwardAuthPolicy | undefined): StoredPolicyData {
  if (p === undefined) throw new Error("the keys service answered without a policy");
  return {
    policyId: p.policyId,
    ...(p.isDefault ? {} : { position: p.position }),
    default: p.isDefault,
    // Stored as the gateway checked it; an empty one (no definition) reads as an empty object.
    policy: JSON.parse(p.definitionJson || "{}") as PolicyInput,
    createdAt: Number(p.createdAt),
    updatedAt: Number(p.updatedAt),
  };
}
