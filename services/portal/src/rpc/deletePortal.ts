import type { MessageInitShape } from "@bufbuild/protobuf";
import type { DeletePortalRequest, DeletePortalResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import { authenticatedCaller, succeeded } from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import { portalNotFound } from "../validation.ts";
import { visiblePortal } from "./visible.ts";

/** portals.deletePortal: its sessions go with it, so every one of their tokens stops working at once. */
export function deletePortal(deps: PortalDeps) {
  return async (req: DeletePortalRequest): Promise<MessageInitShape<typeof DeletePortalResponseSchema>> => {
    const caller = authenticatedCaller(req);
    await visiblePortal(deps, caller, req.portalId, "delete_portal");
    const deleted = await deps.store.deletePortal(
      caller.workspaceId,
      req.portalId,
      succeeded(deps, caller, "portals.deletePortal", [{ type: "portal", id: req.portalId }]),
    );
    if (!deleted) throw portalNotFound(req.portalId);
    return {};
  };
}
