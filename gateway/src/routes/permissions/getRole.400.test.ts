import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.getRole answering 400", () => {
  const h = harness();

  it.each([
    [{}, "/body/role", "role is required."],
    [{ role: "r".repeat(129) }, "/body/role", "role must be at most 128 characters long."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("permissions.getRole", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
