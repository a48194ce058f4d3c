import type { SetRolePermissionsRequest } from "@latchkey/proto/identity/v1/identity_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/permissions.setRolePermissions answering 200", () => {
  let seen: SetRolePermissionsRequest | undefined;
  const h = harness({
    identity: {
      setRolePermissions(req) {
        seen = req;
        return { permissions: req.permissions.map((slug, i) => ({ id: `perm_${i}`, name: slug, slug })) };
      },
    },
  });

  it("answers the role's permissions now, as an array", async () => {
    const res = await h.post("permissions.setRolePermissions", {
      roleId: "role_1",
      permissions: ["documents.read", "documents.write"],
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      { id: "perm_0", name: "documents.read", slug: "documents.read" },
      { id: "perm_1", name: "documents.write", slug: "documents.write" },
    ]);
    expect(seen?.role).toBe("role_1");
  });

  it("clears the permissions with an empty array", async () => {
    const res = await h.post("permissions.setRolePermissions", { roleId: "admin", permissions: [] });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
    expect(seen?.permissions).toEqual([]);
  });
});
