import { create } from "@bufbuild/protobuf";
import {
  type MultiLimitRequest,
  type MultiLimitResponse,
  MultiLimitResponseSchema,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { invalidInput } from "@latchkey/runtime";
import { emitChecked, limitResult, resolveCheck } from "../checks.ts";
import type { RatelimitDeps } from "../deps.ts";
import { MAX_CHECKS, validCaller, validCheck } from "../validate.ts";

/**
 * ratelimit.multiLimit: every check passes and is counted, or none is
 * counted. Each result still says whether its own check would have passed.
 */
export function multiLimit(deps: RatelimitDeps) {
  return async (req: MultiLimitRequest): Promise<MultiLimitResponse> => {
    const started = performance.now();
    const caller = validCaller(req.caller);
    if (req.checks.length === 0 || req.checks.length > MAX_CHECKS) {
      throw invalidInput("/", `must hold 1 to ${MAX_CHECKS} checks`, `Send 1 to ${MAX_CHECKS} checks.`);
    }
    const checks = req.checks.map((c, i) => validCheck(c, `/${i}`));
    const resolved = await Promise.all(checks.map((c) => resolveCheck(deps, caller, c)));
    const outcomes = (await deps.limiter.apply([resolved.map((r) => r.counter)]))[0]!;
    const passed = outcomes.every((o) => o.success);
    for (let i = 0; i < outcomes.length; i++)
      if (!outcomes[i]!.success) deps.exceeded.limitDenied(resolved[i]!, outcomes[i]!);
    if (req.metricsDisabled !== true) {
      resolved.forEach((r, i) => {
        emitChecked(
          deps,
          req.requestId,
          i,
          r,
          { ...outcomes[i]!, success: outcomes[i]!.success && passed },
          started,
        );
      });
    }
    return create(MultiLimitResponseSchema, {
      passed,
      results: resolved.map((r, i) => limitResult(r, outcomes[i]!)),
    });
  };
}
