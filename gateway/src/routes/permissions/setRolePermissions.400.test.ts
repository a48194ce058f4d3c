import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.setRolePermissions answering 400", () => {
  const h = harness();

  it.each([
    [{ permissions: [] }, "/body/roleId", "roleId is required."],
    [{ roleId: "role_1" }, "/body/permissions", "permissions is required."],
    [{ roleId: "r1", permissions: [] }, "/body/roleId", "roleId must be at least 3 characters long."],
    [
      { roleId: "role 1", permissions: [] },
      "/body/roleId",
      "roleId must match the pattern ^[a-zA-Z0-9_-]+$.",
    ],
    [
      { roleId: "role_1", permissions: [""] },
      "/body/permissions/0",
      "permissions[0] must be at least 1 character long.",
    ],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("permissions.setRolePermissions", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toContainEqual(expect.objectContaining({ location, message }));
  });
});
