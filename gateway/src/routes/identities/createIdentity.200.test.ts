import type { CreateIdentityRequest } from "@latchkey/proto/identity/v1/identity_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/identities.createIdentity answering 200", () => {
  let seen: CreateIdentityRequest | undefined;
  const h = harness({
    identity: {
      createIdentity(req) {
        seen = req;
        return { identityId: "id_1" };
      },
    },
  });

  it("answers the identityId and forwards externalId, meta as JSON and the limits", async () => {
    const res = await h.post("identities.createIdentity", {
      externalId: "user_42",
      meta: { plan: "pro" },
      ratelimits: [
        { name: "requests", limit: 100, duration: 60_000, autoApply: true },
        { name: "tokens", limit: 5, duration: 1000 },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ identityId: "id_1" });
    expect(seen?.externalId).toBe("user_42");
    expect(seen?.metaJson).toBe('{"plan":"pro"}');
    expect(seen?.ratelimits.map((r) => [r.name, r.limit, r.duration, r.autoApply])).toEqual([
      ["requests", 100n, 60_000n, true],
      ["tokens", 5n, 1000n, false],
    ]);
  });

  it("sends no meta and no limits when none are given, and ignores fields it does not name", async () => {
    const res = await h.post("identities.createIdentity", { externalId: "user.43-b", extra: 1 });
    expect(res.status).toBe(200);
    expect(seen?.metaJson).toBeUndefined();
    expect(seen?.ratelimits).toEqual([]);
  });
});
