import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/identities.getIdentity answering 200", () => {
  it("answers the identity with meta as an object and its limits as JSON numbers", async () => {
    const asked: string[] = [];
    const h = harness({
      identity: {
        getIdentity(req) {
          asked.push(req.identity);
          return {
            identity: {
              id: "id_1",
              externalId: "user_42",
              metaJson: '{"plan":"pro"}',
              ratelimits: [{ id: "rl_1", name: "requests", limit: 100n, duration: 60_000n, autoApply: true }],
              createdAt: 1n,
              updatedAt: 2n,
            },
          };
        },
      },
    });
    const res = await h.post("identities.getIdentity", { identity: "user_42" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      id: "id_1",
      externalId: "user_42",
      meta: { plan: "pro" },
      ratelimits: [{ id: "rl_1", name: "requests", limit: 100, duration: 60_000, autoApply: true }],
    });
    expect(asked).toEqual(["user_42"]);
  });

  it("omits meta and ratelimits when the identity has none", async () => {
    const h = harness({
      identity: { getIdentity: () => ({ identity: { id: "id_1", externalId: "user_42" } }) },
    });
    const res = await h.post("identities.getIdentity", { identity: "id_1" });
    expect(res.body.data).toEqual({ id: "id_1", externalId: "user_42" });
  });
});
