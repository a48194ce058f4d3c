import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/identities.getIdentity answering 400", () => {
  const h = harness();

  it.each([
    [{}, "/body/identity", "identity is required."],
    [{ identity: "" }, "/body/identity", "identity must be at least 1 character long."],
    [{ identity: "x".repeat(256) }, "/body/identity", "identity must be at most 255 characters long."],
    [
      { identity: "user_42", externalId: "user_42" },
      "/body/externalId",
      "externalId is not a field of this operation.",
    ],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("identities.getIdentity", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
