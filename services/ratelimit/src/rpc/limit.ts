import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import type { LimitCheck, LimitRequest, LimitResponse } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import {
  emitChecked,
  type LastNamespace,
  limitResult,
  type ResolvedCheck,
  resolveCheck,
  resolveCheckNow,
} from "../checks.ts";
import type { RatelimitDeps } from "../deps.ts";
import type { CounterOutcome } from "../limiter/sliding-windows.ts";
import { validCaller, validCheck } from "../validate.ts";

/** ratelimits.limit: one check; a denial is an answer (success:false), not an error. */
export function limit(deps: RatelimitDeps) {
  return async (req: LimitRequest): Promise<LimitResponse> => {
    const started = performance.now();
    const caller = validCaller(req.caller);
    const resolved = await resolveLimit(deps, caller, req.check);
    const outcome = (await deps.limiter.apply([[resolved.counter]]))[0]![0]!;
    return limitAnswer(deps, req, resolved, outcome, started, true);
  };
}

/** Validation and resolution of one check; synchronous when namespace and overrides are cached. */
export function resolveLimit(
  deps: RatelimitDeps,
  caller: Caller,
  check: LimitCheck | undefined,
  last?: LastNamespace,
): ResolvedCheck | Promise<ResolvedCheck> {
  const valid = validCheck(check);
  return resolveCheckNow(deps, caller, valid, last) ?? resolveCheck(deps, caller, valid);
}

/** The answer to a counted check, recorded for analytics unless the request opted out; `echo` as in limitResult. */
export function limitAnswer(
  deps: RatelimitDeps,
  req: LimitRequest | undefined,
  resolved: ResolvedCheck,
  outcome: CounterOutcome,
  started: number,
  echo: boolean,
): LimitResponse {
  if (req?.metricsDisabled !== true) emitChecked(deps, req?.requestId ?? "", 0, resolved, outcome, started);
  if (!outcome.success) deps.exceeded.limitDenied(resolved, outcome);
  return { $typeName: "ratelimit.v1.LimitResponse", result: limitResult(resolved, outcome, echo) };
}
