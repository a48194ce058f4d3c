import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.deleteRole answering 400", () => {
  const h = harness();

  it.each([
    [{}, "/body/role", "role is required."],
    [{ role: "" }, "/body/role", "role must be at least 1 character long."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("permissions.deleteRole", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
