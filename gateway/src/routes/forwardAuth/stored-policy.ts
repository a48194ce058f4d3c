import type { ForwardAuthPolicy } from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { type Static, Type } from "@sinclair/typebox";
import { type PolicyInput, PolicySchema } from "../../forward-auth/policy.ts";
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
 * The definition as the keys service stores it (JSON). The rules beyond the schema (a key's name,
 * stripKey, a default's fields) are the service's to check, with the file loader's own function.
 */
export function definitionJson(policy: PolicyInput): string {
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
