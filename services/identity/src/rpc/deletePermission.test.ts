import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root } from "../../testing/in-memory-identity.ts";

const DELETE = "rbac.*.delete_permission";

describe("deletePermission", () => {
  describe("200", () => {
    it("deletes the permission by slug, takes it out of its roles and announces it", async () => {
      const { client, seed, events } = harness();
      const id = await seed.permission("a");
      await seed.permission("b");
      const roleId = await seed.role("r", ["a", "b"]);
      await client.deletePermission({ caller: root(DELETE), permission: "a" });
      expect(events.at(-1)).toMatchObject({ permissionId: id, permissionSlug: "a", deleted: true });
      await expectReason(
        client.getPermission({ caller: root("*"), permission: id }),
        ErrorReason.PERMISSION_NOT_FOUND,
      );
      const { role } = await client.getRole({ caller: root("*"), role: roleId });
      expect(role?.permissions.map((p) => p.slug)).toEqual(["b"]);
    });

    it("deletes by id", async () => {
      const { client, seed } = harness();
      const id = await seed.permission("a");
      await client.deletePermission({ caller: root(DELETE), permission: id });
      await expectReason(
        client.getPermission({ caller: root("*"), permission: "a" }),
        ErrorReason.PERMISSION_NOT_FOUND,
      );
    });
  });

  describe("400", () => {
    it("refuses an empty permission", async () => {
      const { client } = harness();
      await expectReason(
        client.deletePermission({ caller: root(DELETE), permission: "" }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/permission",
        },
      );
    });
  });

  describe("403", () => {
    it("refuses a root key without rbac.*.delete_permission, naming it, and keeps the permission", async () => {
      const { client, seed } = harness();
      await seed.permission("a");
      await expectReason(
        client.deletePermission({ caller: root("rbac.*.create_permission"), permission: "a" }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: lacks(DELETE) },
      );
      expect((await client.getPermission({ caller: root("*"), permission: "a" })).permission?.slug).toBe("a");
    });
  });

  describe("404", () => {
    it("answers PERMISSION_NOT_FOUND for a missing permission, a deleted one and another workspace's", async () => {
      const { client, seed } = harness();
      await seed.permission("a");
      await expectReason(
        client.deletePermission({ caller: otherRoot(DELETE), permission: "a" }),
        ErrorReason.PERMISSION_NOT_FOUND,
      );
      await client.deletePermission({ caller: root(DELETE), permission: "a" });
      await expectReason(
        client.deletePermission({ caller: root(DELETE), permission: "a" }),
        ErrorReason.PERMISSION_NOT_FOUND,
      );
    });
  });
});
