import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, pageFields, Str } from "../../schema.ts";
import { StoredPolicy, storedPolicyData } from "./stored-policy.ts";

/** data is the page of policies in match order, the default last; paging in pagination {cursor?, hasMore}. */
export const listPolicies = route({
  answer: Type.Array(StoredPolicy),
  paginated: true,
  example: { limit: 50 },
  rootKey: { needs: ["forward_auth.*.read_policy"] },
  schema: Closed({ limit: pageFields.limit, cursor: Type.Optional(Str(0, 4, "^[0-9]*$")) }),
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
const afterOf = (cursor: string | undefined): number | undefined =>
  cursor === undefined || cursor === "" ? undefined : Number(cursor);
