import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ListApisRequest, ListApisResponseSchema } from "@latchkey/proto/keys/v1/keys_pb";
import { domainError, ErrorReason, grantedIds, invalidInput } from "@latchkey/runtime";
import { authenticatedCaller } from "../access.ts";
import type { KeysDeps } from "../deps.ts";

/**
 * apis.listApis (Latchkey's addition: Unkey has no way to list APIs): the
 * workspace's live APIs ordered by id, those the root key may read
 * (api.<id>.read_api each, or api.*.read_api for all). A key that may read
 * none is refused as getApi refuses it; one that may read some sees exactly
 * those that exist, and learns nothing of the others.
 */
export function listApis(deps: KeysDeps) {
  return async (req: ListApisRequest): Promise<MessageInitShape<typeof ListApisResponseSchema>> => {
    const caller = authenticatedCaller(req);
    const limit = req.limit ?? 100;
    if (limit < 1 || limit > 100)
      throw invalidInput("/limit", `limit must be between 1 and 100, got ${limit}`);
    if (req.cursor.length > 255) throw invalidInput("/cursor", "cursor is not one this service issued");
    const ids = grantedIds(caller.permissions, "api", "read_api");
    if (ids?.length === 0) {
      throw domainError(
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        "The root key lacks the permission 'api.*.read_api' (or 'api.<apiId>.read_api' for the APIs it lists).",
      );
    }
    const page = await deps.store.listApis(caller.workspaceId, {
      limit,
      after: req.cursor,
      ...(ids !== undefined && { ids }),
    });
    return {
      apis: page.apis.map((a) => ({ id: a.id, name: a.name, createdAt: BigInt(a.createdAt) })),
      pagination: { cursor: page.next ?? "", hasMore: page.next !== null },
    };
  };
}
