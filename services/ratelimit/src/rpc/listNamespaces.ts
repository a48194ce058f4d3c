import type {
  ListNamespacesRequest,
  ListNamespacesResponse,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { grantedIds, invalidInput } from "@latchkey/runtime";
import type { RatelimitDeps } from "../deps.ts";
import { NAMESPACE_ID_PREFIX, namespaceForbidden } from "../namespaces.ts";
import { PAGE_MAX, validCaller } from "../validate.ts";

/**
 * ratelimits.listNamespaces (Latchkey's addition): the workspace's namespaces
 * ordered by id, those the root key may read (ratelimit.<id>.read_namespace
 * each, or ratelimit.*.read_namespace for all). A key holding the permission
 * for no namespace is refused as any namespace read is; one holding it for
 * some sees exactly those that exist, and learns nothing of the others.
 */
export function listNamespaces(deps: RatelimitDeps) {
  return async (req: ListNamespacesRequest): Promise<ListNamespacesResponse> => {
    const caller = validCaller(req.caller);
    const limit = req.page?.limit || PAGE_MAX;
    if (limit < 1 || limit > PAGE_MAX) {
      throw invalidInput(
        "/limit",
        `must be between 1 and ${PAGE_MAX}`,
        `Send a page size from 1 to ${PAGE_MAX}.`,
      );
    }
    const cursor = req.page?.cursor || undefined;
    if (cursor !== undefined && !cursor.startsWith(NAMESPACE_ID_PREFIX)) {
      throw invalidInput(
        "/cursor",
        "is not a cursor this operation answered",
        "Send the cursor of the previous page.",
      );
    }
    const ids = grantedIds(caller.permissions, "ratelimit", "read_namespace");
    if (ids?.length === 0) throw namespaceForbidden("read_namespace");
    const page = await deps.store.listNamespaces(caller.workspaceId, {
      limit,
      ...(cursor !== undefined && { after: cursor }),
      ...(ids !== undefined && { ids }),
    });
    return {
      $typeName: "ratelimit.v1.ListNamespacesResponse",
      namespaces: page.namespaces.map((ns) => ({
        $typeName: "ratelimit.v1.Namespace",
        id: ns.id,
        name: ns.name,
      })),
      page: {
        $typeName: "common.v1.PageResponse",
        cursor: page.next ?? "",
        hasMore: page.next !== undefined,
      },
    };
  };
}
