import { Type } from "@sinclair/typebox";
import { problems } from "../../problem.ts";
import { route } from "../../route.ts";
import { Closed, pageFields } from "../../schema.ts";
import { StoredPolicy, storedPolicyData } from "./stored-policy.ts";

/** data is the page of policies in match order, the default last; paging in pagination {cursor?, hasMore}. */
export const listPolicies = route({
  answer: Type.Array(StoredPolicy),
  paginated: true,
  example: { limit: 50 },
  rootKey: { needs: ["forward_auth.*.read_policy"] },
  schema: Closed({ limit: pageFields.limit, cursor: pageFields.cursor }),
  permissions: () => ["forward_auth.*.read_policy"],
  async handle(input, { caller, services }) {
    const res = await services.keys.listForwardAuthPolicies({
      caller,
      limit: input.limit ?? 100,
      after: afterOf(input.cursor),
    });
    const data = res.policies.map(storedPolicyData);
    const last = data.at(-1);
    return {
      data,
      pagination:
        res.hasMore && last?.position !== undefined
          ? { cursor: String(last.position), hasMore: true }
          : { hasMore: false },
    };
  },
});

/** The cursor is the last position a page answered. */
function afterOf(cursor: string | undefined): number | undefined {
  if (cursor === undefined || cursor === "") return undefined;
  if (!/^\d{1,4}$/.test(cursor)) {
    throw problems.invalidInput("The cursor is not one forwardAuth.listPolicies answered.", [
      {
        location: "/body/cursor",
        message: "cursor is not one forwardAuth.listPolicies answered",
        fix: "Pass pagination.cursor of the previous answer unchanged, or omit cursor to start from the first policy.",
      },
    ]);
  }
  return Number(cursor);
}
