import type { ListForwardAuthPoliciesRequest } from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

const row = (name: string, position: number, isDefault = false) => ({
  policyId: `fap_${name}`,
  position,
  isDefault,
  definitionJson: JSON.stringify({ name, apiId: "api_1" }),
  createdAt: 1n,
  updatedAt: 2n,
});

describe("POST /v2/forwardAuth.listPolicies answering 200", () => {
  it("answers a page in match order, the default without a position, and the cursor of the next", async () => {
    const seen: ListForwardAuthPoliciesRequest[] = [];
    const h = harness({
      keys: {
        listForwardAuthPolicies(req) {
          seen.push(req);
          return req.after === undefined
            ? { policies: [row("a", 0), row("b", 1)], hasMore: true }
            : { policies: [row("d", -1, true)], hasMore: false };
        },
      },
    });
    const first = await h.post(
      "forwardAuth.listPolicies",
      { limit: 2 },
      { key: h.rootKey("forward_auth.*.read_policy") },
    );
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual([
      {
        policyId: "fap_a",
        position: 0,
        default: false,
        policy: { name: "a", apiId: "api_1" },
        createdAt: 1,
        updatedAt: 2,
      },
      {
        policyId: "fap_b",
        position: 1,
        default: false,
        policy: { name: "b", apiId: "api_1" },
        createdAt: 1,
        updatedAt: 2,
      },
    ]);
    expect(first.body.pagination).toEqual({ cursor: "1", hasMore: true });
    const next = await h.post("forwardAuth.listPolicies", { limit: 2, cursor: "1" });
    expect(next.body.data).toEqual([
      { policyId: "fap_d", default: true, policy: { name: "d", apiId: "api_1" }, createdAt: 1, updatedAt: 2 },
    ]);
    expect(next.body.pagination).toEqual({ hasMore: false });
    expect(seen.map((r) => [r.limit, r.after])).toEqual([
      [2, undefined],
      [2, 1],
    ]);
  });

  it("refuses a cursor it never answered, 400", async () => {
    const h = harness({});
    const res = await h.post("forwardAuth.listPolicies", { cursor: "abc" });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location: "/body/cursor" })]);
  });
});
