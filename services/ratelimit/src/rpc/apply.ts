import type { ApplyRequest, ApplyResponse } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import type { RatelimitDeps } from "../deps.ts";
import { fromCounter, toGroupResult } from "../limiter/wire.ts";

/**
 * RatelimitPeerService.Apply: counts checks another replica forwarded because
 * this one owns them. Always counted here, never forwarded again, so replicas
 * with different peer lists cannot bounce a check between them.
 */
export function apply(deps: RatelimitDeps) {
  return async (req: ApplyRequest): Promise<ApplyResponse> => {
    for (const u of req.undo) {
      if (u.counter) deps.windows.undo(fromCounter(u.counter), Number(u.reset));
    }
    return {
      $typeName: "ratelimit.v1.ApplyResponse",
      groups: req.groups.map((g) => toGroupResult(deps.windows.apply(g.counters.map(fromCounter)))),
    };
  };
}
