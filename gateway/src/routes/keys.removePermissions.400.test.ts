import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../testing.ts";

describe("POST /v2/keys.removePermissions answering 400", () => {
  let called = 0;
  const h = harness({
    keys: {
      removePermissions() {
        called++;
        return { permissions: [] };
      },
    },
  });

  it.each([
    [{ permissions: ["documents.read"] }, "/body/keyId", "keyId is required."],
    [{ keyId: "key_1" }, "/body/permissions", "permissions is required."],
    [{ keyId: "key_1", permissions: null }, "/body/permissions", "permissions must be an array."],
    [{ keyId: "key_1", permissions: "documents.read" }, "/body/permissions", "permissions must be an array."],
    [{ keyId: "key_1", permissions: [] }, "/body/permissions", "permissions must hold at least 1 item."],
    [
      { keyId: "key_1", permissions: Array(1001).fill("p") },
      "/body/permissions",
      "permissions must hold at most 1000 items.",
    ],
    [
      { keyId: "key_1", permissions: [""] },
      "/body/permissions/0",
      "permissions[0] must be at least 1 character long.",
    ],
    [
      { keyId: "key_1", permissions: ["p".repeat(129)] },
      "/body/permissions/0",
      "permissions[0] must be at most 128 characters long.",
    ],
    [
      { keyId: "key_1", permissions: ["ok", "a b"] },
      "/body/permissions/1",
      "permissions[1] must match the pattern ^[a-zA-Z0-9_:\\-\\.\\*]+$.",
    ],
    [{ keyId: "key_1", permissions: [null] }, "/body/permissions/0", "permissions[0] must be a string."],
    [{ keyId: null, permissions: ["p"] }, "/body/keyId", "keyId must be a string."],
    [
      { keyId: "key_1", permissions: ["p"], roles: [] },
      "/body/roles",
      "roles is not a field of this operation.",
    ],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("keys.removePermissions", body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
    expect(called).toBe(0);
  });

  it("accepts 128 characters and 1000 slugs", async () => {
    const res = await h.post("keys.removePermissions", {
      keyId: "key_1",
      permissions: ["p".repeat(128), ...Array(999).fill("q")],
    });
    expect(res.status).toBe(200);
    expect(called).toBe(1);
  });
});
