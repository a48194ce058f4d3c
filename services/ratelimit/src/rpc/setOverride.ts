import { create } from "@bufbuild/protobuf";
import {
  type SetOverrideRequest,
  type SetOverrideResponse,
  SetOverrideResponseSchema,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { auditSuccess } from "@latchkey/runtime";
import type { RatelimitDeps } from "../deps.ts";
import { authorizedNamespace } from "../namespaces.ts";
import { integer, MIN_DURATION, text, validCaller } from "../validate.ts";

/** ratelimits.setOverride: upsert by (namespace, identifier), keeping the overrideId; limit 0 bans. */
export function setOverride(deps: RatelimitDeps) {
  return async (req: SetOverrideRequest): Promise<SetOverrideResponse> => {
    const caller = validCaller(req.caller);
    const input = {
      namespace: text(req.namespace, "/namespace"),
      identifier: text(req.identifier, "/identifier"),
      limit: integer(req.limit, "/limit", 0),
      duration: integer(req.duration, "/duration", MIN_DURATION),
    };
    const ns = await authorizedNamespace(deps.namespaces, caller, input.namespace, "set_override");
    const override = await deps.store.setOverride(
      { namespaceId: ns.id, identifier: input.identifier, limit: input.limit, duration: input.duration },
      (o) =>
        auditSuccess(
          caller,
          caller.workspaceId,
          "ratelimit.setOverride",
          [
            { type: "override", id: o.id },
            { type: "namespace", id: ns.id },
          ],
          ["identifier", "limit", "duration"],
          deps.clock.now(),
        ),
    );
    deps.overrides.invalidate(ns.id);
    await deps.events.overridesChanged(ns.workspaceId, ns.id);
    return create(SetOverrideResponseSchema, { overrideId: override.id });
  };
}
