import type { ListPermissionsRequest } from "@latchkey/proto/identity/v1/identity_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.listPermissions answering 200", () => {
  it("answers the permissions as data with pagination, and forwards the paging", async () => {
    let seen: ListPermissionsRequest | undefined;
    const h = harness({
      identity: {
        listPermissions(req) {
          seen = req;
          return {
            permissions: [{ id: "perm_1", name: "n", slug: "documents.read", description: "d" }],
            page: { cursor: "perm_1", hasMore: true },
          };
        },
      },
    });
    const res = await h.post("permissions.listPermissions", { limit: 1, cursor: "perm_0", search: "doc" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([{ id: "perm_1", name: "n", slug: "documents.read", description: "d" }]);
    expect(res.body.pagination).toEqual({ cursor: "perm_1", hasMore: true });
    expect([seen?.page?.limit, seen?.page?.cursor, seen?.search]).toEqual([1, "perm_0", "doc"]);
  });

  it("answers an empty page as data [] and hasMore false", async () => {
    const h = harness({
      identity: { listPermissions: () => ({ permissions: [], page: { hasMore: false } }) },
    });
    const res = await h.post("permissions.listPermissions", {});
    expect(res.body.data).toEqual([]);
    expect(res.body.pagination).toEqual({ hasMore: false });
  });
});
