import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root } from "../../testing/in-memory-identity.ts";

const READ = "rbac.*.read_role";

describe("listRoles", () => {
  describe("200", () => {
    it("pages through every role once, with its permissions, and says when no more follow", async () => {
      const { client, seed } = harness();
      const ids = [await seed.role("a", ["p1"]), await seed.role("b"), await seed.role("c")];
      const first = await client.listRoles({ caller: root(READ), page: { limit: 2 } });
      expect(first.page?.hasMore).toBe(true);
      const second = await client.listRoles({
        caller: root(READ),
        page: { limit: 2, cursor: first.page?.cursor },
      });
      expect(second.page).toMatchObject({ hasMore: false, cursor: "" });
      const all = [...first.roles, ...second.roles];
      expect(all.map((r) => r.id)).toEqual([...ids].sort((x, y) => (x < y ? -1 : 1)));
      expect(all.find((r) => r.name === "a")?.permissions.map((p) => p.slug)).toEqual(["p1"]);
    });

    it("searches the name and description case-insensitively", async () => {
      const { client, seed } = harness();
      await seed.role("Admin");
      await seed.role("reader", [], { description: "reads ADMIN things" });
      await seed.role("writer");
      const res = await client.listRoles({ caller: root(READ), search: "admin" });
      expect(res.roles.map((r) => r.name).sort()).toEqual(["Admin", "reader"]);
    });

    it("lists only the caller's workspace", async () => {
      const { client, seed } = harness();
      await seed.role("a");
      expect((await client.listRoles({ caller: otherRoot(READ) })).roles).toEqual([]);
    });
  });

  describe("400", () => {
    it("refuses a limit above 100", async () => {
      const { client } = harness();
      await expectReason(
        client.listRoles({ caller: root(READ), page: { limit: 1000 } }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/limit",
        },
      );
    });
  });

  describe("403", () => {
    it("refuses a root key without rbac.*.read_role, naming it", async () => {
      const { client } = harness();
      await expectReason(
        client.listRoles({ caller: root("rbac.*.read_permission") }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        {
          message: lacks(READ),
        },
      );
    });
  });
});
