import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../testing.ts";

describe("POST /v2/keys.setRoles answering 400", () => {
  let called = 0;
  const h = harness({
    keys: {
      setRoles() {
        called++;
        return { roles: [] };
      },
    },
  });

  it.each([
    [{ roles: ["admin"] }, "/body/keyId", "keyId is required."],
    [{ keyId: "key_1" }, "/body/roles", "roles is required."],
    [{ keyId: "key_1", roles: null }, "/body/roles", "roles must be an array."],
    [{ keyId: "key_1", roles: Array(101).fill("r") }, "/body/roles", "roles must hold at most 100 items."],
    [{ keyId: "key_1", roles: [""] }, "/body/roles/0", "roles[0] must be at least 1 character long."],
    [
      { keyId: "key_1", roles: ["ok", "r".repeat(129)] },
      "/body/roles/1",
      "roles[1] must be at most 128 characters long.",
    ],
    [{ keyId: "key_1", roles: [7] }, "/body/roles/0", "roles[0] must be a string."],
    [{ keyId: "k", roles: ["admin"] }, "/body/keyId", "keyId must be at least 3 characters long."],
    [
      { keyId: "key_1", roles: ["admin"], permissions: [] },
      "/body/permissions",
      "permissions is not a field of this operation.",
    ],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("keys.setRoles", body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
    expect(called).toBe(0);
  });

  it("accepts 128 characters and 100 roles", async () => {
    const res = await h.post("keys.setRoles", {
      keyId: "key_1",
      roles: ["r".repeat(128), ...Array(99).fill("s")],
    });
    expect(res.status).toBe(200);
    expect(called).toBe(1);
  });
});
