import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.listPermissions answering 400", () => {
  const h = harness();

  it.each([
    [{ limit: 101 }, "/body/limit", "limit must be at most 100."],
    [{ limit: 1.5 }, "/body/limit", "limit must be an integer."],
    [{ cursor: "c".repeat(1025) }, "/body/cursor", "cursor must be at most 1024 characters long."],
    [{ search: "s".repeat(257) }, "/body/search", "search must be at most 256 characters long."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("permissions.listPermissions", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
