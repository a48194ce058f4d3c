import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root } from "../../testing/in-memory-identity.ts";

const READ = "rbac.*.read_permission";

describe("listPermissions", () => {
  describe("200", () => {
    it("pages through every permission once and says when no more follow", async () => {
      const { client, seed } = harness();
      const ids = [];
      for (const s of ["a", "b", "c"]) ids.push(await seed.permission(s));
      const first = await client.listPermissions({ caller: root(READ), page: { limit: 2 } });
      expect(first.page).toMatchObject({ hasMore: true, cursor: first.permissions[1]?.id });
      const second = await client.listPermissions({
        caller: root(READ),
        page: { limit: 2, cursor: first.page?.cursor },
      });
      expect(second.page).toMatchObject({ hasMore: false, cursor: "" });
      expect([...first.permissions, ...second.permissions].map((p) => p.id)).toEqual(
        [...ids].sort((a, b) => (a < b ? -1 : 1)),
      );
    });

    it("searches the name, slug and description case-insensitively", async () => {
      const { client, seed } = harness();
      await seed.permission("documents.read", { name: "Reader" });
      await seed.permission("billing.write", { description: "Writes invoices" });
      const search = async (s: string) =>
        (await client.listPermissions({ caller: root(READ), search: s })).permissions.map((p) => p.slug);
      expect(await search("READER")).toEqual(["documents.read"]);
      expect(await search("Invoices")).toEqual(["billing.write"]);
      expect(await search("billing.")).toEqual(["billing.write"]);
    });

    it("lists only the caller's workspace", async () => {
      const { client, seed } = harness();
      await seed.permission("a");
      expect((await client.listPermissions({ caller: otherRoot(READ) })).permissions).toEqual([]);
    });
  });

  describe("400", () => {
    it("refuses a limit above 100 and a cursor over 1024 characters", async () => {
      const { client } = harness();
      await expectReason(
        client.listPermissions({ caller: root(READ), page: { limit: 101 } }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/limit",
        },
      );
      await expectReason(
        client.listPermissions({ caller: root(READ), page: { cursor: "c".repeat(1025) } }),
        ErrorReason.INVALID_INPUT,
        { location: "/cursor" },
      );
    });
  });

  describe("403", () => {
    it("refuses a root key without rbac.*.read_permission, naming it", async () => {
      const { client } = harness();
      await expectReason(
        client.listPermissions({ caller: root("rbac.*.read_role") }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        {
          message: lacks(READ),
        },
      );
    });
  });
});
