import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/identities.listIdentities answering 400", () => {
  const h = harness();

  it.each([
    [{ limit: 0 }, "/body/limit", "limit must be at least 1."],
    [{ limit: 101 }, "/body/limit", "limit must be at most 100."],
    [{ cursor: "c".repeat(1025) }, "/body/cursor", "cursor must be at most 1024 characters long."],
    [{ search: "s".repeat(257) }, "/body/search", "search must be at most 256 characters long."],
    [{ externalId: "user_1" }, "/body/externalId", "externalId is not a field of this operation."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("identities.listIdentities", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
