import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

const limit = { name: "requests", limit: 10, duration: 60_000 };

describe("POST /v2/identities.createIdentity answering 400", () => {
  const h = harness();

  it.each([
    [{}, "/body/externalId", "externalId is required."],
    [{ externalId: "" }, "/body/externalId", "externalId must be at least 1 character long."],
    [{ externalId: "x".repeat(256) }, "/body/externalId", "externalId must be at most 255 characters long."],
    [{ externalId: "user 42" }, "/body/externalId", "externalId must match the pattern ^[a-zA-Z0-9_.-]+$."],
    [{ externalId: "u", meta: [] }, "/body/meta", "meta must be an object."],
    [
      { externalId: "u", ratelimits: Array(51).fill(limit) },
      "/body/ratelimits",
      "ratelimits must hold at most 50 items.",
    ],
    [
      { externalId: "u", ratelimits: [{ ...limit, duration: 999 }] },
      "/body/ratelimits/0/duration",
      "ratelimits[0].duration must be at least 1000.",
    ],
    [
      { externalId: "u", ratelimits: [{ ...limit, name: "ab" }] },
      "/body/ratelimits/0/name",
      "ratelimits[0].name must be at least 3 characters long.",
    ],
    [
      { externalId: "u", ratelimits: [{ name: "requests" }] },
      "/body/ratelimits/0/limit",
      "ratelimits[0].limit is required.",
    ],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("identities.createIdentity", body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toContainEqual(expect.objectContaining({ location, message }));
  });
});
