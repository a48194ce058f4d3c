import { create } from "@bufbuild/protobuf";
import { PageResponseSchema } from "@latchkey/proto/common/v1/common_pb";
import {
  type ListOverridesRequest,
  type ListOverridesResponse,
  ListOverridesResponseSchema,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { invalidInput } from "@latchkey/runtime";
import type { RatelimitDeps } from "../deps.ts";
import { authorizedNamespace } from "../namespaces.ts";
import { overrideMessage } from "../overrides.ts";
import { PAGE_DEFAULT, PAGE_MAX, text, validCaller } from "../validate.ts";

/**
 * ratelimits.listOverrides: pages ordered by id. The cursor is the last id of
 * the previous page and is answered only when another page exists.
 */
export function listOverrides(deps: RatelimitDeps) {
  return async (req: ListOverridesRequest): Promise<ListOverridesResponse> => {
    const caller = validCaller(req.caller);
    const namespace = text(req.namespace, "/namespace");
    const limit = req.page?.limit || PAGE_DEFAULT;
    if (limit < 1 || limit > PAGE_MAX) {
      throw invalidInput(
        "/limit",
        `must be between 1 and ${PAGE_MAX}`,
        `Send a page size from 1 to ${PAGE_MAX}.`,
      );
    }
    const cursor = req.page?.cursor || undefined;
    if (cursor !== undefined && !cursor.startsWith("rlor_")) {
      throw invalidInput(
        "/cursor",
        "is not a cursor this operation answered",
        "Send the cursor of the previous page.",
      );
    }
    const ns = await authorizedNamespace(deps.namespaces, caller, namespace, "read_override");
    const page = await deps.store.listOverrides(ns.id, { limit, ...(cursor ? { after: cursor } : {}) });
    return create(ListOverridesResponseSchema, {
      overrides: page.overrides.map((o) => overrideMessage(ns, o)),
      page: create(PageResponseSchema, { cursor: page.next ?? "", hasMore: page.next !== undefined }),
    });
  };
}
