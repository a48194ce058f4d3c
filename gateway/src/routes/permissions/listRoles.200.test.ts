import type { ListRolesRequest } from "@latchkey/proto/identity/v1/identity_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.listRoles answering 200", () => {
  it("answers the roles with their permissions as data, with pagination", async () => {
    let seen: ListRolesRequest | undefined;
    const h = harness({
      identity: {
        listRoles(req) {
          seen = req;
          return {
            roles: [
              { id: "role_1", name: "admin", permissions: [{ id: "perm_1", name: "n", slug: "s" }] },
              { id: "role_2", name: "viewer" },
            ],
            page: { cursor: "", hasMore: false },
          };
        },
      },
    });
    const res = await h.post("permissions.listRoles", { search: "a" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      { id: "role_1", name: "admin", permissions: [{ id: "perm_1", name: "n", slug: "s" }] },
      { id: "role_2", name: "viewer" },
    ]);
    expect(res.body.pagination).toEqual({ hasMore: false });
    expect([seen?.page?.limit, seen?.search]).toEqual([100, "a"]);
  });
});
