import type { ListApisRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.listApis answering 200", () => {
  it("answers the APIs as data, with id, name and createdAt, and paging in pagination {cursor, hasMore}", async () => {
    const all = ["a", "b", "c"].map((id, i) => ({
      id: `api_${id}`,
      name: `API ${id}`,
      createdAt: BigInt(1_767_225_600_000 + i),
    }));
    const seen: ListApisRequest[] = [];
    const h = harness({
      keys: {
        listApis(req) {
          seen.push(req);
          const start = req.cursor ? all.findIndex((a) => a.id === req.cursor) + 1 : 0;
          const end = start + (req.limit ?? 100);
          const hasMore = end < all.length;
          return {
            apis: all.slice(start, end),
            pagination: { cursor: hasMore ? all[end - 1]!.id : "", hasMore },
          };
        },
      },
    });
    const first = await h.post("apis.listApis", { limit: 2 });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual([
      { id: "api_a", name: "API a", createdAt: 1_767_225_600_000 },
      { id: "api_b", name: "API b", createdAt: 1_767_225_600_001 },
    ]);
    expect(first.body.pagination).toEqual({ cursor: "api_b", hasMore: true });
    const second = await h.post("apis.listApis", { limit: 2, cursor: "api_b" });
    expect(second.body.data.map((a: { id: string }) => a.id)).toEqual(["api_c"]);
    expect(second.body.pagination).toEqual({ hasMore: false });
    const defaults = await h.post("apis.listApis", {});
    expect(defaults.status).toBe(200);
    expect(seen.map((r) => [r.limit, r.cursor])).toEqual([
      [2, ""],
      [2, "api_b"],
      [100, ""],
    ]);
  });
});
