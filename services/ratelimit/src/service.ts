import type { ServiceImpl } from "@connectrpc/connect";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import type { RatelimitPeerService, RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { resourcesOf, withFailureAudit } from "@latchkey/runtime";
import type { RatelimitDeps } from "./deps.ts";
import { apply } from "./rpc/apply.ts";
import { checkNamedLimits } from "./rpc/checkNamedLimits.ts";
import { deleteOverride } from "./rpc/deleteOverride.ts";
import { getOverride } from "./rpc/getOverride.ts";
import { limit } from "./rpc/limit.ts";
import { limitBatch } from "./rpc/limitBatch.ts";
import { listOverrides } from "./rpc/listOverrides.ts";
import { multiLimit } from "./rpc/multiLimit.ts";
import { setOverride } from "./rpc/setOverride.ts";

export function service(deps: RatelimitDeps): ServiceImpl<typeof RatelimitService> {
  return {
    limit: limit(deps),
    multiLimit: multiLimit(deps),
    setOverride: audited(deps, "ratelimit.setOverride", setOverride(deps)),
    getOverride: getOverride(deps),
    listOverrides: listOverrides(deps),
    deleteOverride: audited(deps, "ratelimit.deleteOverride", deleteOverride(deps)),
    limitBatch: limitBatch(deps),
    checkNamedLimits: checkNamedLimits(deps),
  };
}

/**
 * An override's change, under its public name: a refusal leaves its failure record naming the
 * namespace the request gave (the success record is written by the store with the change).
 */
function audited<Req extends { caller?: Caller | undefined; namespace: string }, Res>(
  deps: RatelimitDeps,
  operation: string,
  handler: (req: Req) => Promise<Res>,
): (req: Req) => Promise<Res> {
  return (req) =>
    withFailureAudit(
      { store: deps.store, now: () => deps.clock.now(), log: deps.log },
      req.caller,
      operation,
      resourcesOf(["namespace", req.namespace]),
      () => handler(req),
    );
}

/** Served beside the public service so replicas can forward the checks they do not own. */
export function peerService(deps: RatelimitDeps): ServiceImpl<typeof RatelimitPeerService> {
  return { apply: apply(deps) };
}
