import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreatePortalRequest, CreatePortalResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import {
  authenticatedCaller,
  domainError,
  ErrorReason,
  newId,
  requirePermissions,
  succeeded,
} from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import { brandingOf, nameOf, slugOf, ttlOf } from "../validation.ts";

/** portals.createPortal: a portal in front of an API the root key may read (else 404, as a missing API). */
export function createPortal(deps: PortalDeps) {
  return async (req: CreatePortalRequest): Promise<MessageInitShape<typeof CreatePortalResponseSchema>> => {
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["portal.*.create_portal"]);
    const name = nameOf(req.name);
    const slug = req.slug === undefined ? null : slugOf(req.slug);
    const branding = brandingOf(req.branding);
    const sessionTtlMs = ttlOf(req.sessionTtlMs);
    // The keys service judges the API: missing, another workspace's, or unreadable all answer 404.
    const { api } = await deps.keys.getApi({ caller, apiId: req.apiId });
    const id = newId("portal");
    const now = deps.clock.now();
    const max = deps.settings.maxPortalsPerWorkspace;
    const fields = [
      "apiId",
      "name",
      ...(slug !== null ? ["slug"] : []),
      ...(req.branding ? ["branding"] : []),
    ];
    const result = await deps.store.createPortal(
      {
        id,
        workspaceId: caller.workspaceId,
        apiId: api?.id ?? req.apiId,
        name,
        slug,
        ...branding,
        sessionTtlMs,
        createdAt: now,
        updatedAt: now,
      },
      max,
      succeeded(
        deps,
        caller,
        "portals.createPortal",
        [
          { type: "portal", id },
          { type: "api", id: req.apiId },
        ],
        [...fields, ...(req.sessionTtlMs !== undefined ? ["sessionTtlMs"] : [])],
      ),
    );
    if (result === "full") {
      throw domainError(
        ErrorReason.PRECONDITION_FAILED,
        `The workspace already has ${max} portals, the most it may have; delete one first.`,
      );
    }
    if (result === "slug taken") {
      throw domainError(
        ErrorReason.PORTAL_ALREADY_EXISTS,
        `Another portal of the workspace has the slug '${slug}'.`,
      );
    }
    return { portalId: id };
  };
}
