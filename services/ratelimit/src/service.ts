import type { ServiceImpl } from "@connectrpc/connect";
import type { RatelimitPeerService, RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { audited, resourcesOf } from "@latchkey/runtime";
import type { RatelimitDeps } from "./deps.ts";
import { apply } from "./rpc/apply.ts";
import { checkNamedLimits } from "./rpc/checkNamedLimits.ts";
import { deleteOverride } from "./rpc/deleteOverride.ts";
import { getOverride } from "./rpc/getOverride.ts";
import { limit } from "./rpc/limit.ts";
import { limitBatch } from "./rpc/limitBatch.ts";
import { listNamespaces } from "./rpc/listNamespaces.ts";
import { listOverrides } from "./rpc/listOverrides.ts";
import { multiLimit } from "./rpc/multiLimit.ts";
import { setOverride } from "./rpc/setOverride.ts";

export function service(deps: RatelimitDeps): ServiceImpl<typeof RatelimitService> {
  return {
    limit: limit(deps),
    multiLimit: multiLimit(deps),
    setOverride: audited(deps, "ratelimit.setOverride", namespaceOf, setOverride(deps)),
    getOverride: getOverride(deps),
    listOverrides: listOverrides(deps),
    listNamespaces: listNamespaces(deps),
    deleteOverride: audited(deps, "ratelimit.deleteOverride", namespaceOf, deleteOverride(deps)),
    limitBatch: limitBatch(deps),
    checkNamedLimits: checkNamedLimits(deps),
  };
}

/** A refused override change names the namespace the request gave. */
const namespaceOf = (req: { namespace: string }) => resourcesOf(["namespace", req.namespace]);

/** Served beside the public service so replicas can forward the checks they do not own. */
export function peerService(deps: RatelimitDeps): ServiceImpl<typeof RatelimitPeerService> {
  return { apply: apply(deps) };
}
