import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Str } from "../../schema.ts";
import { StoredPolicy, storedPolicyData } from "./stored-policy.ts";

export const getPolicy = route({
  answer: StoredPolicy,
  example: { policyId: "fap_4kLm9QzT2xWvB8nE" },
  rootKey: { needs: ["forward_auth.*.read_policy"] },
  errors: [404],
  schema: Closed({ policyId: Str(3, 255, ID_PATTERN) }),
  permissions: () => ["forward_auth.*.read_policy"],
  async handle(input, { caller, services }) {
    const res = await services.keys.getForwardAuthPolicy({ caller, policyId: input.policyId });
    return { data: storedPolicyData(res.policy) };
  },
});
