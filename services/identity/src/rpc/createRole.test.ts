import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root, WS } from "../../testing/in-memory-identity.ts";

const CREATE = "rbac.*.create_role";
const ADD = "rbac.*.add_permission_to_role";
const CREATE_PERMISSION = "rbac.*.create_permission";

describe("createRole", () => {
  describe("200", () => {
    it("creates a role without permissions holding only rbac.*.create_role", async () => {
      const { client, events } = harness();
      const { roleId } = await client.createRole({
        caller: root(CREATE),
        name: "admin",
        description: "All of it",
      });
      expect(roleId).toMatch(/^role_/);
      const { role } = await client.getRole({ caller: root("*"), role: roleId });
      expect(role).toMatchObject({ id: roleId, name: "admin", description: "All of it", permissions: [] });
      expect(events.map((e) => [e.workspaceId, e.roleId, e.roleName])).toEqual([[WS, roleId, "admin"]]);
    });

    it("attaches existing permissions, each once, ordered by slug", async () => {
      const { client, seed } = harness();
      const read = await seed.permission("documents.read");
      const write = await seed.permission("documents.write");
      const { roleId } = await client.createRole({
        caller: root(CREATE, ADD),
        name: "editor",
        permissions: ["documents.write", "documents.read", "documents.write"],
      });
      const { role } = await client.getRole({ caller: root("*"), role: roleId });
      expect(role?.permissions.map((p) => [p.id, p.slug])).toEqual([
        [read, "documents.read"],
        [write, "documents.write"],
      ]);
    });

    it("creates missing permissions (name = slug) when the root key holds rbac.*.create_permission, and announces them", async () => {
      const { client, seed, events } = harness();
      await seed.permission("a");
      const before = events.length;
      const { roleId } = await client.createRole({
        caller: root(CREATE, ADD, CREATE_PERMISSION),
        name: "r",
        permissions: ["a", "new.one"],
      });
      const { permission } = await client.getPermission({ caller: root("*"), permission: "new.one" });
      expect(permission).toMatchObject({ name: "new.one", slug: "new.one" });
      const { role } = await client.getRole({ caller: root("*"), role: roleId });
      expect(role?.permissions.map((p) => p.slug)).toEqual(["a", "new.one"]);
      expect(events.slice(before).map((e) => e.permissionSlug || e.roleName)).toEqual(["new.one", "r"]);
    });
  });

  describe("400", () => {
    it("refuses an empty name, a name over 128 characters and an invalid slug", async () => {
      const { client } = harness();
      await expectReason(client.createRole({ caller: root("*"), name: "" }), ErrorReason.INVALID_INPUT, {
        location: "/name",
      });
      await expectReason(
        client.createRole({ caller: root("*"), name: "n".repeat(129) }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/name",
        },
      );
      await expectReason(
        client.createRole({ caller: root("*"), name: "r", permissions: ["ok", "not ok"] }),
        ErrorReason.INVALID_INPUT,
        { location: "/permissions/1" },
      );
    });
  });

  describe("403", () => {
    it("refuses a root key without rbac.*.create_role, naming it", async () => {
      const { client } = harness();
      await expectReason(
        client.createRole({ caller: root("rbac.*.read_role"), name: "r" }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        {
          message: lacks(CREATE),
        },
      );
    });

    it("needs rbac.*.add_permission_to_role to create a role with permissions", async () => {
      const { client, seed } = harness();
      await seed.permission("a");
      await expectReason(
        client.createRole({ caller: root(CREATE), name: "r", permissions: ["a"] }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: lacks(ADD) },
      );
    });

    it("refuses to create a missing permission without rbac.*.create_permission, naming it and the slug, and creates nothing", async () => {
      const { client, seed, deps } = harness();
      await seed.permission("a");
      await expectReason(
        client.createRole({ caller: root(CREATE, ADD), name: "r", permissions: ["a", "missing"] }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        {
          message:
            "The permission 'missing' does not exist, and creating it needs the permission 'rbac.*.create_permission', which the root key lacks.",
        },
      );
      expect(await deps.store.findRole(WS, "r")).toBeUndefined();
      expect(await deps.store.findPermission(WS, "missing")).toBeUndefined();
    });
  });

  describe("409", () => {
    it("refuses a second role with the same name and creates none of its permissions", async () => {
      const { client, seed, deps } = harness();
      const first = await seed.role("admin");
      await expectReason(
        client.createRole({ caller: root("*"), name: "admin", permissions: ["fresh"] }),
        ErrorReason.ROLE_ALREADY_EXISTS,
        { message: "A role named 'admin' already exists in this workspace." },
      );
      expect((await deps.store.findRole(WS, "admin"))?.id).toBe(first);
      expect(await deps.store.findPermission(WS, "fresh")).toBeUndefined();
    });

    it("lets another workspace use the same name", async () => {
      const { client, seed } = harness();
      await seed.role("admin");
      const { roleId } = await client.createRole({ caller: otherRoot(CREATE), name: "admin" });
      expect(roleId).toMatch(/^role_/);
    });
  });
});
