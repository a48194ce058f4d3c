import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root } from "../../testing/in-memory-identity.ts";

const READ = "rbac.*.read_role";

describe("getRole", () => {
  describe("200", () => {
    it("answers the role with its permissions, by id and by name", async () => {
      const { client, seed } = harness();
      await seed.permission("b", { name: "Bee", description: "the b" });
      const id = await seed.role("admin", ["b", "a"], { description: "d" });
      const byId = await client.getRole({ caller: root(READ), role: id });
      const byName = await client.getRole({ caller: root(READ), role: "admin" });
      expect(byName).toEqual(byId);
      expect(byId.role).toMatchObject({ id, name: "admin", description: "d" });
      expect(byId.role?.permissions.map((p) => [p.slug, p.name, p.description])).toEqual([
        ["a", "a", undefined],
        ["b", "Bee", "the b"],
      ]);
    });
  });

  describe("400", () => {
    it("refuses an empty role", async () => {
      const { client } = harness();
      await expectReason(client.getRole({ caller: root(READ), role: "" }), ErrorReason.INVALID_INPUT, {
        location: "/role",
      });
    });
  });

  describe("403", () => {
    it("refuses a root key without rbac.*.read_role, naming it", async () => {
      const { client, seed } = harness();
      await seed.role("admin");
      await expectReason(
        client.getRole({ caller: root("rbac.*.read_permission"), role: "admin" }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: lacks(READ) },
      );
    });
  });

  describe("404", () => {
    it("answers ROLE_NOT_FOUND for a missing role and for another workspace's", async () => {
      const { client, seed } = harness();
      const id = await seed.role("admin");
      await expectReason(client.getRole({ caller: root(READ), role: "nope" }), ErrorReason.ROLE_NOT_FOUND, {
        message: "The role 'nope' was not found.",
      });
      await expectReason(client.getRole({ caller: otherRoot(READ), role: id }), ErrorReason.ROLE_NOT_FOUND);
      await expectReason(
        client.getRole({ caller: otherRoot(READ), role: "admin" }),
        ErrorReason.ROLE_NOT_FOUND,
      );
    });
  });
});
