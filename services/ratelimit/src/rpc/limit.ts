import { create } from "@bufbuild/protobuf";
import {
  type LimitRequest,
  type LimitResponse,
  LimitResponseSchema,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { emitChecked, limitResult, resolveCheck } from "../checks.ts";
import type { RatelimitDeps } from "../deps.ts";
import { validCaller, validCheck } from "../validate.ts";

/** ratelimits.limit: one check; a denial is an answer (success:false), not an error. */
export function limit(deps: RatelimitDeps) {
  return async (req: LimitRequest): Promise<LimitResponse> => {
    const started = performance.now();
    const caller = validCaller(req.caller);
    const check = validCheck(req.check);
    const resolved = await resolveCheck(deps, caller, check);
    const outcome = (await deps.limiter.apply([[resolved.counter]]))[0]![0]!;
    emitChecked(deps, req.requestId, 0, resolved, outcome, started);
    return create(LimitResponseSchema, { result: limitResult(resolved, outcome) });
  };
}
