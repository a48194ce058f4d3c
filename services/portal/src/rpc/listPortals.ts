import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ListPortalsRequest, ListPortalsResponseSchema } from "@latchkey/proto/portal/v1/portal_pb";
import { authenticatedCaller, holds } from "@latchkey/runtime";
import type { PortalDeps } from "../deps.ts";
import { portalView } from "../session.ts";
import { pageOf } from "../validation.ts";

/** The workspace's portals by id; those the root key may not read are left out of each page. */
export function listPortals(deps: PortalDeps) {
  return async (req: ListPortalsRequest): Promise<MessageInitShape<typeof ListPortalsResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const page = pageOf(req.page);
    const rows = await deps.store.listPortals(caller.workspaceId, {
      limit: page.limit + 1,
      after: page.after,
    });
    const items = rows.slice(0, page.limit);
    const hasMore = rows.length > page.limit;
    const cursor = hasMore ? items[items.length - 1]!.id : "";
    return {
      portals: items.filter((p) => holds(caller.permissions, `portal.${p.id}.read_portal`)).map(portalView),
      page: { cursor, hasMore },
    };
  };
}
