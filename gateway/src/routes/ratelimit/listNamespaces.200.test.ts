import type { ListNamespacesRequest } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/ratelimits.listNamespaces answering 200", () => {
  it("answers the namespaces as data, id and name, and paging in pagination {cursor, hasMore}", async () => {
    const seen: ListNamespacesRequest[] = [];
    const h = harness({
      ratelimit: {
        listNamespaces(req) {
          seen.push(req);
          return req.page?.cursor
            ? { namespaces: [{ id: "rlns_c", name: "sms" }], page: { cursor: "", hasMore: false } }
            : {
                namespaces: [
                  { id: "rlns_a", name: "email.outbound" },
                  { id: "rlns_b", name: "api.requests" },
                ],
                page: { cursor: "rlns_b", hasMore: true },
              };
        },
      },
    });
    const first = await h.post("ratelimits.listNamespaces", { limit: 2 });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual([
      { id: "rlns_a", name: "email.outbound" },
      { id: "rlns_b", name: "api.requests" },
    ]);
    expect(first.body.pagination).toEqual({ cursor: "rlns_b", hasMore: true });
    const second = await h.post("ratelimits.listNamespaces", { cursor: "rlns_b" });
    expect(second.body).toMatchObject({
      data: [{ id: "rlns_c", name: "sms" }],
      pagination: { hasMore: false },
    });
    expect(seen.map((r) => [r.page?.limit, r.page?.cursor])).toEqual([
      [2, ""],
      [100, "rlns_b"],
    ]);
  });
});
