import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { holds } from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import type { PortalRecord } from "../store/portal-store.ts";
import { portalNotFound } from "../validation.ts";

/**
 * The portal `id` when the caller holds `portal.<id>.<action>`; otherwise, as when it is missing,
 * PORTAL_NOT_FOUND, so a root key learns nothing of portals it may not touch.
 */
export async function visiblePortal(
  deps: PortalDeps,
  caller: Caller,
  id: string,
  action: string,
): Promise<PortalRecord> {
  const portal = await deps.store.findPortal(caller.workspaceId, id);
  if (!portal || !holds(caller.permissions, `portal.${portal.id}.${action}`)) throw portalNotFound(id);
  return portal;
}
