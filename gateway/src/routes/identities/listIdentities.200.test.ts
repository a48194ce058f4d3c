import type { ListIdentitiesRequest } from "@latchkey/proto/identity/v1/identity_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

/** Three identities, paged by the fake as the service would. */
function identities() {
  const all = ["a", "b", "c"].map((id) => ({ id: `id_${id}`, externalId: `user_${id}` }));
  const seen: ListIdentitiesRequest[] = [];
  const h = harness({
    identity: {
      listIdentities(req) {
        seen.push(req);
        const start = req.page?.cursor ? all.findIndex((i) => i.id === req.page?.cursor) + 1 : 0;
        const end = start + (req.page?.limit ?? 100);
        const hasMore = end < all.length;
        return {
          identities: all.slice(start, end),
          page: { cursor: hasMore ? all[end - 1]!.id : "", hasMore },
        };
      },
    },
  });
  return { h, seen };
}

describe("POST /v2/identities.listIdentities answering 200", () => {
  it("answers the identities as data and paging in pagination {cursor, hasMore}", async () => {
    const { h, seen } = identities();
    const first = await h.post("identities.listIdentities", { limit: 2, search: "user" });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual([
      { id: "id_a", externalId: "user_a" },
      { id: "id_b", externalId: "user_b" },
    ]);
    expect(first.body.pagination).toEqual({ cursor: "id_b", hasMore: true });
    const last = await h.post("identities.listIdentities", { limit: 2, cursor: "id_b" });
    expect(last.body.data).toEqual([{ id: "id_c", externalId: "user_c" }]);
    expect(last.body.pagination).toEqual({ hasMore: false });
    expect(seen.map((r) => [r.page?.limit, r.page?.cursor, r.search])).toEqual([
      [2, "", "user"],
      [2, "id_b", ""],
    ]);
  });

  it("asks for pages of 100 when no limit is given", async () => {
    const { h, seen } = identities();
    expect((await h.post("identities.listIdentities", {})).status).toBe(200);
    expect(seen[0]?.page?.limit).toBe(100);
  });
});
