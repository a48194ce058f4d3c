import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.deletePermission answering 400", () => {
  const h = harness();

  it.each([
    [{}, "/body/permission", "permission is required."],
    [{ permission: "p".repeat(129) }, "/body/permission", "permission must be at most 128 characters long."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("permissions.deletePermission", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
