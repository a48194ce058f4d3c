import type { Route } from "../../route.ts";
import { createPortal } from "./createPortal.ts";
import { deletePortal } from "./deletePortal.ts";
import { getPortal } from "./getPortal.ts";
import { listPortals } from "./listPortals.ts";
import { revokeSession } from "./revokeSession.ts";
import { updatePortal } from "./updatePortal.ts";

/** Latchkey's additions: portals managed with a root key (docs/portal.md). */
export const portalsRoutes = {
  "portals.createPortal": createPortal,
  "portals.getPortal": getPortal,
  "portals.listPortals": listPortals,
  "portals.updatePortal": updatePortal,
  "portals.deletePortal": deletePortal,
  "portals.revokeSession": revokeSession,
} satisfies Record<`portals.${string}`, Route>;
