import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.getPermission answering 400", () => {
  const h = harness();

  it.each([
    [{}, "/body/permission", "permission is required."],
    [{ permission: "" }, "/body/permission", "permission must be at least 1 character long."],
    [
      { permission: "a b" },
      "/body/permission",
      "permission must match the pattern ^[a-zA-Z0-9_:\\-\\.\\*]+$.",
    ],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("permissions.getPermission", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
