import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.createRole answering 400", () => {
  const h = harness();

  it.each([
    [{}, "/body/name", "name is required."],
    [{ name: "r".repeat(129) }, "/body/name", "name must be at most 128 characters long."],
    [
      { name: "admin", description: "d".repeat(513) },
      "/body/description",
      "description must be at most 512 characters long.",
    ],
    [{ name: "admin", permissions: "documents.read" }, "/body/permissions", "permissions must be an array."],
    [
      { name: "admin", permissions: ["ok", "not ok"] },
      "/body/permissions/1",
      "permissions[1] must match the pattern ^[a-zA-Z0-9_:\\-\\.\\*]+$.",
    ],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("permissions.createRole", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
