import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, otherRoot, root, WS } from "../../testing/in-memory-identity.ts";

// What the keys service passes for keys.addPermissions.
const KEY_EDITOR = root("api.*.update_key", "rbac.*.add_permission_to_key");

describe("resolvePermissions", () => {
  describe("200", () => {
    it("answers the permissions found in the order named and the missing slugs, creating nothing", async () => {
      const { client, seed, deps } = harness();
      const b = await seed.permission("b");
      const a = await seed.permission("a");
      const res = await client.resolvePermissions({ caller: KEY_EDITOR, slugs: ["b", "x", "a", "b"] });
      expect(res.permissions.map((p) => [p.id, p.slug])).toEqual([
        [b, "b"],
        [a, "a"],
      ]);
      expect(res.missing).toEqual(["x"]);
      expect(await deps.store.findPermission(WS, "x")).toBeUndefined();
    });

    it("creates the missing slugs when asked and the root key holds rbac.*.create_permission", async () => {
      const { client, seed, events } = harness();
      const a = await seed.permission("a");
      const before = events.length;
      const res = await client.resolvePermissions({
        caller: root("rbac.*.create_permission"),
        slugs: ["new.one", "a"],
        createMissing: true,
      });
      expect(res.missing).toEqual([]);
      expect(res.permissions.map((p) => [p.slug, p.name])).toEqual([
        ["new.one", "new.one"],
        ["a", "a"],
      ]);
      expect(res.permissions[1]?.id).toBe(a);
      expect(events.slice(before).map((e) => e.permissionSlug)).toEqual(["new.one"]);
    });

    it("needs no rbac.*.create_permission when asked to create but nothing is missing", async () => {
      const { client, seed } = harness();
      await seed.permission("a");
      const res = await client.resolvePermissions({ caller: KEY_EDITOR, slugs: ["a"], createMissing: true });
      expect(res.permissions.map((p) => p.slug)).toEqual(["a"]);
    });

    it("treats another workspace's permissions as missing", async () => {
      const { client, seed } = harness();
      await seed.permission("a");
      const res = await client.resolvePermissions({ caller: otherRoot(), slugs: ["a"] });
      expect(res.missing).toEqual(["a"]);
    });
  });

  describe("400", () => {
    it("refuses an invalid slug", async () => {
      const { client } = harness();
      await expectReason(
        client.resolvePermissions({ caller: KEY_EDITOR, slugs: ["ok", "not ok"] }),
        ErrorReason.INVALID_INPUT,
        { location: "/permissions/1" },
      );
    });
  });

  describe("403", () => {
    it("refuses to create a missing slug without rbac.*.create_permission, naming it, and creates nothing", async () => {
      const { client, deps } = harness();
      await expectReason(
        client.resolvePermissions({ caller: KEY_EDITOR, slugs: ["x"], createMissing: true }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        {
          message:
            "The permission 'x' does not exist, and creating it needs the permission 'rbac.*.create_permission', which the root key lacks.",
        },
      );
      expect(await deps.store.findPermission(WS, "x")).toBeUndefined();
    });
  });
});
