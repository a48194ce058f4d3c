import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root } from "../../testing/in-memory-identity.ts";

const READ = "rbac.*.read_permission";

describe("getPermission", () => {
  describe("200", () => {
    it("answers the permission by id and by slug", async () => {
      const { client, seed } = harness();
      const id = await seed.permission("documents.read", { name: "Read" });
      const byId = await client.getPermission({ caller: root(READ), permission: id });
      const bySlug = await client.getPermission({ caller: root(READ), permission: "documents.read" });
      expect(bySlug).toEqual(byId);
      expect(byId.permission).toMatchObject({ id, name: "Read", slug: "documents.read" });
      expect(byId.permission?.description).toBeUndefined();
    });
  });

  describe("400", () => {
    it("refuses an empty permission", async () => {
      const { client } = harness();
      await expectReason(
        client.getPermission({ caller: root(READ), permission: "" }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/permission",
        },
      );
    });
  });

  describe("403", () => {
    it("refuses a root key without rbac.*.read_permission, naming it, whether or not the permission exists", async () => {
      const { client, seed } = harness();
      await seed.permission("a");
      for (const permission of ["a", "missing"]) {
        await expectReason(
          client.getPermission({ caller: root("rbac.*.read_role"), permission }),
          ErrorReason.INSUFFICIENT_PERMISSIONS,
          { message: lacks(READ) },
        );
      }
    });
  });

  describe("404", () => {
    it("answers PERMISSION_NOT_FOUND for a missing permission and for another workspace's", async () => {
      const { client, seed } = harness();
      const id = await seed.permission("a");
      await expectReason(
        client.getPermission({ caller: root(READ), permission: "b" }),
        ErrorReason.PERMISSION_NOT_FOUND,
        {
          message: "The permission 'b' was not found.",
        },
      );
      await expectReason(
        client.getPermission({ caller: otherRoot(READ), permission: id }),
        ErrorReason.PERMISSION_NOT_FOUND,
      );
      await expectReason(
        client.getPermission({ caller: otherRoot(READ), permission: "a" }),
        ErrorReason.PERMISSION_NOT_FOUND,
      );
    });
  });
});
