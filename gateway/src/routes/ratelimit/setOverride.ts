import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, Int, Str } from "../../schema.ts";

/** Upsert by namespace and identifier; the identifier may hold `*` wildcards; limit 0 always denies. */
export const setOverride = route({
  audited: true,
  description:
    "Precedence is deterministic: an exact identifier beats every wildcard, and among wildcards the longest literal part wins, ties broken by identifier. `limit: 0` is a ban that always denies.",
  answer: Closed({ overrideId: Type.String({ examples: ["rlo_2cGKbMxRjIzhCxo1IdjH3a"] }) }),
  example: { namespace: "email", identifier: "user_1", limit: 5, duration: 60_000 },
  rootKey: { needs: ["ratelimit.<namespace>.set_override"] },
  errors: [404],
  schema: Closed({
    namespace: Str(1, 512),
    identifier: Str(1, 512),
    limit: Int(),
    duration: Int({ minimum: 1000 }),
  }),
  async handle(input, { caller, services }) {
    const res = await services.ratelimit.setOverride({
      caller,
      namespace: input.namespace,
      identifier: input.identifier,
      limit: BigInt(input.limit),
      duration: BigInt(input.duration),
    });
    return { data: { overrideId: res.overrideId } };
  },
});
