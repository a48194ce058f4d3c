import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, lacks, otherRoot, root, WS } from "../../testing/in-memory-identity.ts";

const CREATE = "rbac.*.create_permission";

describe("createPermission", () => {
  describe("200", () => {
    it("creates a permission with name, slug and description and announces it", async () => {
      const { client, events, clock } = harness();
      const { permissionId } = await client.createPermission({
        caller: root(CREATE),
        name: "Read documents",
        slug: "documents.read",
        description: "Lets a key read documents",
      });
      expect(permissionId).toMatch(/^perm_/);
      const { permission } = await client.getPermission({ caller: root("*"), permission: permissionId });
      expect(permission).toMatchObject({
        id: permissionId,
        name: "Read documents",
        slug: "documents.read",
        description: "Lets a key read documents",
        createdAt: BigInt(clock.now()),
      });
      expect(events.map((e) => [e.workspaceId, e.permissionId, e.permissionSlug])).toEqual([
        [WS, permissionId, "documents.read"],
      ]);
    });

    it("accepts every slug character Unkey allows, including a wildcard", async () => {
      const { client } = harness();
      const { permissionId } = await client.createPermission({
        caller: root(CREATE),
        name: "n",
        slug: "a_b:c-d.*",
      });
      expect(permissionId).toMatch(/^perm_/);
    });

    it("lets another workspace use the same slug", async () => {
      const { client, seed } = harness();
      await seed.permission("documents.read");
      const { permissionId } = await client.createPermission({
        caller: otherRoot(CREATE),
        name: "n",
        slug: "documents.read",
      });
      expect(permissionId).toMatch(/^perm_/);
    });
  });

  describe("400", () => {
    it("refuses an empty name, an empty slug and a slug with a forbidden character", async () => {
      const { client } = harness();
      await expectReason(
        client.createPermission({ caller: root(CREATE), name: "", slug: "a" }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/name",
        },
      );
      await expectReason(
        client.createPermission({ caller: root(CREATE), name: "n", slug: "" }),
        ErrorReason.INVALID_INPUT,
        {
          location: "/slug",
        },
      );
      await expectReason(
        client.createPermission({ caller: root(CREATE), name: "n", slug: "documents read" }),
        ErrorReason.INVALID_INPUT,
        { location: "/slug" },
      );
    });

    it("refuses a slug over 128, a name over 512 and a description over 512 characters", async () => {
      const { client } = harness();
      await expectReason(
        client.createPermission({ caller: root(CREATE), name: "n", slug: "a".repeat(129) }),
        ErrorReason.INVALID_INPUT,
        { location: "/slug" },
      );
      await expectReason(
        client.createPermission({ caller: root(CREATE), name: "n".repeat(513), slug: "a" }),
        ErrorReason.INVALID_INPUT,
        { location: "/name" },
      );
      await expectReason(
        client.createPermission({ caller: root(CREATE), name: "n", slug: "a", description: "d".repeat(513) }),
        ErrorReason.INVALID_INPUT,
        { location: "/description" },
      );
    });
  });

  describe("403", () => {
    it("refuses a root key without rbac.*.create_permission, naming it, and creates nothing", async () => {
      const { client, deps } = harness();
      await expectReason(
        client.createPermission({ caller: root("rbac.*.read_permission"), name: "n", slug: "a" }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: lacks(CREATE) },
      );
      expect(await deps.store.findPermission(WS, "a")).toBeUndefined();
    });
  });

  describe("409", () => {
    it("refuses a second permission with the same slug", async () => {
      const { client, seed } = harness();
      const first = await seed.permission("documents.read", { name: "first" });
      await expectReason(
        client.createPermission({ caller: root(CREATE), name: "second", slug: "documents.read" }),
        ErrorReason.PERMISSION_ALREADY_EXISTS,
        { message: "A permission with slug 'documents.read' already exists in this workspace." },
      );
      const { permission } = await client.getPermission({ caller: root("*"), permission: "documents.read" });
      expect([permission?.id, permission?.name]).toEqual([first, "first"]);
    });
  });
});
