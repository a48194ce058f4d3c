import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Int, Str } from "../../schema.ts";
import { BodyPolicy, definitionJson, StoredPolicy, storedPolicyData } from "./stored-policy.ts";

/**
 * Replaces the policy's definition (policy: the whole new one), moves it in match order (position),
 * or both (neither changes nothing); answers the policy as it now is. Takes effect on the next forward-auth request.
 * 404: the policy is not the workspace's, or the new definition's apiId names no API of it.
 */
export const updatePolicy = route({
  audited: true,
  answer: StoredPolicy,
  example: {
    policyId: "fap_4kLm9QzT2xWvB8nE",
    policy: { name: "orders", paths: ["/v1/orders/**"], apiId: "api_123", permissions: "orders.write" },
  },
  rootKey: { needs: ["forward_auth.*.update_policy"] },
  errors: [404, 409],
  schema: Closed({
    policyId: Str(3, 255, ID_PATTERN),
    policy: Type.Optional(BodyPolicy),
    /** The new place in match order, from 0; past the end: last. The default does not move. */
    position: Type.Optional(Int({ maximum: 1000 })),
  }),
  permissions: () => ["forward_auth.*.update_policy"],
  async handle(input, { caller, services }) {
    const res = await services.keys.updateForwardAuthPolicy({
      caller,
      policyId: input.policyId,
      definitionJson: input.policy === undefined ? undefined : definitionJson(input.policy),
      position: input.position,
    });
    return { data: storedPolicyData(res.policy) };
  },
});
