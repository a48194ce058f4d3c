import type { UpdateIdentityRequest } from "@latchkey/proto/identity/v1/identity_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/identities.updateIdentity answering 200", () => {
  let seen: UpdateIdentityRequest | undefined;
  const h = harness({
    identity: {
      updateIdentity(req) {
        seen = req;
        return {
          identity: {
            id: "id_1",
            externalId: "user_42",
            metaJson: req.metaJson,
            ratelimits: (req.ratelimits?.ratelimits ?? []).map((r) => ({ ...r, id: "rl_1" })),
          },
        };
      },
    },
  });

  it("replaces meta and the limits, and answers the identity as it is now", async () => {
    const res = await h.post("identities.updateIdentity", {
      identity: "user_42",
      meta: { plan: "team" },
      ratelimits: [{ name: "requests", limit: 10, duration: 1000 }],
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      id: "id_1",
      externalId: "user_42",
      meta: { plan: "team" },
      ratelimits: [{ id: "rl_1", name: "requests", limit: 10, duration: 1000, autoApply: false }],
    });
    expect(seen?.identity).toBe("user_42");
  });

  it("keeps what is omitted: no meta and no limit set is sent", async () => {
    await h.post("identities.updateIdentity", { identity: "user_42" });
    expect(seen?.metaJson).toBeUndefined();
    expect(seen?.ratelimits).toBeUndefined();
  });

  it("sends an empty set for ratelimits [] and an empty object for meta {}, which clear them", async () => {
    const res = await h.post("identities.updateIdentity", { identity: "user_42", meta: {}, ratelimits: [] });
    expect(res.status).toBe(200);
    expect(seen?.metaJson).toBe("{}");
    expect(seen?.ratelimits?.ratelimits).toEqual([]);
    expect(res.body.data).toEqual({ id: "id_1", externalId: "user_42", meta: {} });
  });
});
