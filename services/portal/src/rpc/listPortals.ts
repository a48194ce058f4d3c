import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ListPortalsRequest, ListPortalsResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import { authenticatedCaller, requirePermissions } from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import { portalView } from "../session.ts";
import { pageOf } from "../validation.ts";

/** The workspace's portals by id: reading them all takes `portal.*.read_portal`, as webhooks.list does. */
export function listPortals(deps: PortalDeps) {
  return async (req: ListPortalsRequest): Promise<MessageInitShape<typeof ListPortalsResponseSchema>> => {
    const caller = authenticatedCaller(req);
    requirePermissions(caller, ["portal.*.read_portal"]);
    const page = pageOf(req.page);
    const rows = await deps.store.listPortals(caller.workspaceId, {
      limit: page.limit + 1,
      after: page.after,
    });
    const items = rows.slice(0, page.limit);
    const hasMore = rows.length > page.limit;
    const cursor = hasMore ? items[items.length - 1]!.id : "";
    return {
      portals: items.map(portalView),
      page: { cursor, hasMore },
    };
  };
}
