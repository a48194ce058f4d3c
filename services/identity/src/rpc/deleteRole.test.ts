import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root } from "../../testing/in-memory-identity.ts";

const DELETE = "rbac.*.delete_role";

describe("deleteRole", () => {
  describe("200", () => {
    it("deletes the role by name, keeps its permissions and announces it", async () => {
      const { client, seed, events } = harness();
      const id = await seed.role("admin", ["a"]);
      await client.deleteRole({ caller: root(DELETE), role: "admin" });
      expect(events.at(-1)).toMatchObject({ roleId: id, roleName: "admin", deleted: true });
      await expectReason(client.getRole({ caller: root("*"), role: id }), ErrorReason.ROLE_NOT_FOUND);
      expect((await client.getPermission({ caller: root("*"), permission: "a" })).permission?.slug).toBe("a");
    });

    it("deletes by id and frees the name", async () => {
      const { client, seed } = harness();
      const id = await seed.role("admin");
      await client.deleteRole({ caller: root(DELETE), role: id });
      expect(await seed.role("admin")).not.toBe(id);
    });
  });

  describe("400", () => {
    it("refuses an empty role", async () => {
      const { client } = harness();
      await expectReason(client.deleteRole({ caller: root(DELETE), role: "" }), ErrorReason.INVALID_INPUT, {
        location: "/role",
      });
    });
  });

  describe("403", () => {
    it("refuses a root key without rbac.*.delete_role, naming it, and keeps the role", async () => {
      const { client, seed } = harness();
      await seed.role("admin");
      await expectReason(
        client.deleteRole({ caller: root("rbac.*.create_role"), role: "admin" }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: lacks(DELETE) },
      );
      expect((await client.getRole({ caller: root("*"), role: "admin" })).role?.name).toBe("admin");
    });
  });

  describe("404", () => {
    it("answers ROLE_NOT_FOUND for a missing role, a deleted one and another workspace's", async () => {
      const { client, seed } = harness();
      await seed.role("admin");
      await expectReason(
        client.deleteRole({ caller: otherRoot(DELETE), role: "admin" }),
        ErrorReason.ROLE_NOT_FOUND,
      );
      await client.deleteRole({ caller: root(DELETE), role: "admin" });
      await expectReason(
        client.deleteRole({ caller: root(DELETE), role: "admin" }),
        ErrorReason.ROLE_NOT_FOUND,
      );
    });
  });
});
