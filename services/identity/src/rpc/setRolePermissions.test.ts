import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root, WS } from "../../testing/in-memory-identity.ts";

const ADD = "rbac.*.add_permission_to_role";
const REMOVE = "rbac.*.remove_permission_from_role";
const SET = [ADD, REMOVE];

describe("setRolePermissions", () => {
  describe("200", () => {
    it("replaces the role's permissions and answers the new set ordered by slug", async () => {
      const { client, seed, events } = harness();
      await seed.permission("c");
      const roleId = await seed.role("r", ["a", "b"]);
      const res = await client.setRolePermissions({
        caller: root(...SET),
        role: roleId,
        permissions: ["c", "b", "c"],
      });
      expect(res.permissions.map((p) => p.slug)).toEqual(["b", "c"]);
      const { role } = await client.getRole({ caller: root("*"), role: roleId });
      expect(role?.permissions).toEqual(res.permissions);
      expect(events.at(-1)).toMatchObject({ workspaceId: WS, roleId, roleName: "r", deleted: false });
    });

    it("clears the permissions with an empty set and keeps the permissions themselves", async () => {
      const { client, seed } = harness();
      await seed.role("r", ["a"]);
      const res = await client.setRolePermissions({ caller: root(...SET), role: "r", permissions: [] });
      expect(res.permissions).toEqual([]);
      expect((await client.getRole({ caller: root("*"), role: "r" })).role?.permissions).toEqual([]);
      expect((await client.getPermission({ caller: root("*"), permission: "a" })).permission?.slug).toBe("a");
    });

    it("creates missing permissions when the root key holds rbac.*.create_permission", async () => {
      const { client, seed } = harness();
      await seed.role("r");
      const res = await client.setRolePermissions({
        caller: root(...SET, "rbac.*.create_permission"),
        role: "r",
        permissions: ["fresh.one"],
      });
      expect(res.permissions.map((p) => [p.slug, p.name])).toEqual([["fresh.one", "fresh.one"]]);
    });
  });

  describe("400", () => {
    it("refuses an empty role and an invalid slug", async () => {
      const { client } = harness();
      await expectReason(
        client.setRolePermissions({ caller: root(...SET), role: "" }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/roleId",
        },
      );
      await expectReason(
        client.setRolePermissions({ caller: root(...SET), role: "r", permissions: ["bad slug"] }),
        ErrorReason.INVALID_INPUT,
        { location: "/permissions/0" },
      );
    });
  });

  describe("403", () => {
    it("needs both rbac.*.add_permission_to_role and rbac.*.remove_permission_from_role, naming the missing one", async () => {
      const { client, seed } = harness();
      await seed.role("r");
      await expectReason(
        client.setRolePermissions({ caller: root(ADD), role: "r", permissions: [] }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: lacks(REMOVE) },
      );
      await expectReason(
        client.setRolePermissions({ caller: root(REMOVE), role: "r", permissions: [] }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: lacks(ADD) },
      );
    });

    it("refuses to create a missing permission without rbac.*.create_permission and leaves the role as it was", async () => {
      const { client, seed, deps } = harness();
      await seed.role("r", ["a"]);
      await expectReason(
        client.setRolePermissions({ caller: root(...SET), role: "r", permissions: ["x", "y"] }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        {
          message:
            "The permissions 'x', 'y' do not exist, and creating them needs the permission 'rbac.*.create_permission', which the root key lacks.",
        },
      );
      expect((await deps.store.findRole(WS, "r"))?.permissions.map((p) => p.slug)).toEqual(["a"]);
    });
  });

  describe("404", () => {
    it("answers ROLE_NOT_FOUND for a missing role and another workspace's, creating no permission", async () => {
      const { client, seed, deps } = harness();
      await seed.role("r");
      await expectReason(
        client.setRolePermissions({ caller: root("*"), role: "nope", permissions: ["new"] }),
        ErrorReason.ROLE_NOT_FOUND,
      );
      await expectReason(
        client.setRolePermissions({ caller: otherRoot("*"), role: "r", permissions: ["new"] }),
        ErrorReason.ROLE_NOT_FOUND,
      );
      expect(await deps.store.findPermission(WS, "new")).toBeUndefined();
    });
  });
});
