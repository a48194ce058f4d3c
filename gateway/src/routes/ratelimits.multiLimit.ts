import { Type } from "@sinclair/typebox";
import { defined, num } from "../json.ts";
import { route } from "../route.ts";
import { limitCheck, limitCheckSchema, overrideIdOf } from "./ratelimits.limit.ts";

/** The body is a bare JSON array of 1 to 100 checks; all pass or none is counted. */
export const multiLimit = route({
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
