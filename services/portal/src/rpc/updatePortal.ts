import type { MessageInitShape } from "@bufbuild/protobuf";
import type { UpdatePortalRequest, UpdatePortalResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import { authenticatedCaller, domainError, ErrorReason, succeeded } from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import type { PortalPatch } from "../store/portal-store.ts";
import { brandingOf, nameOf, portalNotFound, slugOf, ttlOf } from "../validation.ts";
import { visiblePortal } from "./visible.ts";

export function updatePortal(deps: PortalDeps) {
  return async (req: UpdatePortalRequest): Promise<MessageInitShape<typeof UpdatePortalResponseSchema>> => {
    const caller = authenticatedCaller(req);
    await visiblePortal(deps, caller, req.portalId, "update_portal");
    const patch: PortalPatch = { updatedAt: deps.clock.now() };
    const fields: string[] = [];
    if (req.name !== undefined) {
      patch.name = nameOf(req.name);
      fields.push("name");
    }
    if (req.slug !== undefined) {
      patch.slug = req.slug === "" ? null : slugOf(req.slug);
      fields.push("slug");
    }
    if (req.branding !== undefined) {
      patch.branding = brandingOf(req.branding);
      fields.push("branding");
    }
    if (req.sessionTtlMs !== undefined) {
      patch.sessionTtlMs = ttlOf(req.sessionTtlMs);
      fields.push("sessionTtlMs");
    }
    const result = await deps.store.updatePortal(
      caller.workspaceId,
      req.portalId,
      patch,
      succeeded(deps, caller, "portals.updatePortal", [{ type: "portal", id: req.portalId }], fields),
    );
    if (result === "missing") throw portalNotFound(req.portalId);
    if (result === "slug taken") {
      throw domainError(
        ErrorReason.PORTAL_ALREADY_EXISTS,
        `Another portal of the workspace has the slug '${req.slug}'.`,
      );
    }
    return {};
  };
}
