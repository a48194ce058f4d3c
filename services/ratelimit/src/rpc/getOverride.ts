import { create } from "@bufbuild/protobuf";
import {
  type GetOverrideRequest,
  type GetOverrideResponse,
  GetOverrideResponseSchema,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { domainError, ErrorReason } from "@latchkey/runtime";
import type { RatelimitDeps } from "../deps.ts";
import { authorizedNamespace } from "../namespaces.ts";
import { overrideMessage } from "../overrides.ts";
import { text, validCaller } from "../validate.ts";

/** ratelimits.getOverride: by the exact identifier it was set with (a pattern is not matched here). */
export function getOverride(deps: RatelimitDeps) {
  return async (req: GetOverrideRequest): Promise<GetOverrideResponse> => {
    const caller = validCaller(req.caller);
    const namespace = text(req.namespace, "/namespace");
    const identifier = text(req.identifier, "/identifier");
    const ns = await authorizedNamespace(deps.namespaces, caller, namespace, "read_override");
    const override = await deps.store.getOverride(ns.id, identifier);
    if (!override) {
      throw domainError(ErrorReason.OVERRIDE_NOT_FOUND, `No override for '${identifier}' in this namespace.`);
    }
    return create(GetOverrideResponseSchema, { override: overrideMessage(ns, override) });
  };
}
