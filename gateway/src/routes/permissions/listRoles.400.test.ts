import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.listRoles answering 400", () => {
  const h = harness();

  it.each([
    [{ limit: 0 }, "/body/limit", "limit must be at least 1."],
    [{ cursor: 5 }, "/body/cursor", "cursor must be a string."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("permissions.listRoles", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
