import { create } from "@bufbuild/protobuf";
import {
  type DeleteOverrideRequest,
  type DeleteOverrideResponse,
  DeleteOverrideResponseSchema,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { auditSuccess, domainError, ErrorReason } from "@latchkey/runtime";
import type { RatelimitDeps } from "../deps.ts";
import { authorizedNamespace } from "../namespaces.ts";
import { text, validCaller } from "../validate.ts";

/** ratelimits.deleteOverride: the next check of a matching identifier uses its own limit again. */
export function deleteOverride(deps: RatelimitDeps) {
  return async (req: DeleteOverrideRequest): Promise<DeleteOverrideResponse> => {
    const caller = validCaller(req.caller);
    const namespace = text(req.namespace, "/namespace");
    const identifier = text(req.identifier, "/identifier");
    const ns = await authorizedNamespace(deps.namespaces, caller, namespace, "delete_override");
    const existing = await deps.store.getOverride(ns.id, identifier);
    const audit =
      existing &&
      auditSuccess(
        caller,
        caller.workspaceId,
        "ratelimit.deleteOverride",
        [
          { type: "override", id: existing.id },
          { type: "namespace", id: ns.id },
        ],
        [],
        deps.clock.now(),
      );
    if (!existing || !(await deps.store.deleteOverride(ns.id, identifier, audit))) {
      throw domainError(ErrorReason.OVERRIDE_NOT_FOUND, `No override for '${identifier}' in this namespace.`);
    }
    deps.overrides.invalidate(ns.id);
    await deps.events.overridesChanged(ns.workspaceId, ns.id);
    return create(DeleteOverrideResponseSchema, {});
  };
}
