import type { ListOverridesRequest } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

/** A namespace holding three overrides, paged by the fake as the service would. */
function overrides() {
  const all = ["a", "b", "c"].map((id) => ({
    overrideId: `rlor_${id}`,
    namespace: "email",
    identifier: `user_${id}`,
    limit: 5n,
    duration: 1000n,
  }));
  const seen: ListOverridesRequest[] = [];
  const h = harness({
    ratelimit: {
      listOverrides(req) {
        seen.push(req);
        const start = req.page?.cursor ? Number(req.page.cursor) : 0;
        const end = start + (req.page?.limit ?? 10);
        const hasMore = end < all.length;
        return { overrides: all.slice(start, end), page: { cursor: hasMore ? String(end) : "", hasMore } };
      },
    },
  });
  return { h, seen };
}

const item = (id: string) => ({
  overrideId: `rlor_${id}`,
  identifier: `user_${id}`,
  limit: 5,
  duration: 1000,
});

describe("POST /v2/ratelimits.listOverrides answering 200 (Latchkey's shape)", () => {
  it("answers data {overrides, cursor} while another page exists, then no cursor", async () => {
    const { h, seen } = overrides();
    const first = await h.post("ratelimits.listOverrides", { namespace: "email", limit: 2 });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({ overrides: [item("a"), item("b")], cursor: "2" });
    expect(first.body.pagination).toBeUndefined();
    const last = await h.post("ratelimits.listOverrides", { namespace: "email", limit: 2, cursor: "2" });
    expect(last.body.data).toEqual({ overrides: [item("c")] });
    expect(seen.map((r) => [r.page?.limit, r.page?.cursor])).toEqual([
      [2, ""],
      [2, "2"],
    ]);
  });

  it("asks for pages of 10 when no limit is given", async () => {
    const { h, seen } = overrides();
    await h.post("ratelimits.listOverrides", { namespace: "email" });
    expect(seen[0]?.page?.limit).toBe(10);
  });
});

describe("POST /v2/ratelimit.listOverrides answering 200 (Unkey's shape)", () => {
  it("answers the array as data and paging in pagination {cursor, hasMore}", async () => {
    const { h } = overrides();
    const first = await h.post("ratelimit.listOverrides", { namespace: "email", limit: 2 });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual([item("a"), item("b")]);
    expect(first.body.pagination).toEqual({ cursor: "2", hasMore: true });
    const last = await h.post("ratelimit.listOverrides", { namespace: "email", limit: 2, cursor: "2" });
    expect(last.body.data).toEqual([item("c")]);
    expect(last.body.pagination).toEqual({ hasMore: false });
  });
});
