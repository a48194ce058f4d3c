import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/identities.updateIdentity answering 400", () => {
  const h = harness();

  it.each([
    [{ meta: {} }, "/body/identity", "identity is required."],
    [{ identity: "u", meta: null }, "/body/meta", "meta must be an object."],
    [{ identity: "u", ratelimits: null }, "/body/ratelimits", "ratelimits must be an array."],
    [
      { identity: "u", ratelimits: [{ name: "requests", limit: 0, duration: 1000 }] },
      "/body/ratelimits/0/limit",
      "ratelimits[0].limit must be at least 1.",
    ],
    [{ identity: "u", externalId: "v" }, "/body/externalId", "externalId is not a field of this operation."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("identities.updateIdentity", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
