import { Type } from "@sinclair/typebox";
import { defined, num } from "../../json.ts";
import { route } from "../../route.ts";
import { Closed, Int } from "../../schema.ts";
import { limitCheck, limitCheckSchema, overrideIdOf } from "./limit.ts";

/** The body is a bare JSON array of 1 to 100 checks; all pass or none is counted. */
export const multiLimit = route({
  answer: Closed({
    passed: Type.Boolean(),
    limits: Type.Array(
      Closed({
        namespace: Type.String(),
        identifier: Type.String(),
        limit: Int(),
        remaining: Int(),
        reset: Int(),
        passed: Type.Boolean(),
        overrideId: Type.Optional(Type.String()),
      }),
    ),
  }),
  example: [{ namespace: "email", identifier: "user_1", limit: 10, duration: 60_000 }],
  rootKey: {
    needs: ["ratelimit.<namespace>.limit"],
    also: "for each namespace; one that does not exist yet: also `ratelimit.*.create_namespace`",
  },
  schema: Type.Array(limitCheckSchema, { minItems: 1, maxItems: 100 }),
  async handle(input, { caller, requestId, services }) {
    const res = await services.ratelimit.multiLimit({ caller, checks: input.map(limitCheck), requestId });
    return {
      data: {
        passed: res.passed,
        limits: res.results.map((r) =>
          defined({
            namespace: r.namespace,
            identifier: r.identifier,
            limit: num(r.limit),
            remaining: num(r.remaining),
            reset: num(r.reset),
            passed: r.success,
            overrideId: overrideIdOf(r),
          }),
        ),
      },
    };
  },
});
