import { Empty } from "../../answers.ts";
import { route } from "../../route.ts";
import { Closed, ID_PATTERN, Str } from "../../schema.ts";

/** data {}; the policies after it move up one place; forward-auth requests it matched fall to the next. */
export const deletePolicy = route({
  audited: true,
  answer: Empty,
  example: { policyId: "fap_4kLm9QzT2xWvB8nE" },
  rootKey: { needs: ["forward_auth.*.delete_policy"] },
  errors: [404],
  schema: Closed({ policyId: Str(3, 255, ID_PATTERN) }),
  permissions: () => ["forward_auth.*.delete_policy"],
  async handle(input, { caller, services }) {
    await services.keys.deleteForwardAuthPolicy({ caller, policyId: input.policyId });
    return { data: {} };
  },
});
