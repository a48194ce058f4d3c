import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, harness, otherRoot, root } from "../../testing/in-memory-identity.ts";

const VERIFIER = root("api.*.verify_key");

describe("resolveRoles", () => {
  describe("200", () => {
    it("answers the roles named with their permission slugs, in the order named, and the missing names", async () => {
      const { client, seed } = harness();
      await seed.role("reader", ["documents.read"]);
      await seed.role("admin", ["documents.*", "billing.read"]);
      const res = await client.resolveRoles({
        caller: VERIFIER,
        names: ["admin", "ghost", "reader", "admin"],
      });
      expect(res.roles.map((r) => [r.name, r.permissions.map((p) => p.slug)])).toEqual([
        ["admin", ["billing.read", "documents.*"]],
        ["reader", ["documents.read"]],
      ]);
      expect(res.missing).toEqual(["ghost"]);
    });

    it("reflects a change to a role's permissions at once", async () => {
      const { client, seed } = harness();
      await seed.role("r", ["a"]);
      await client.setRolePermissions({ caller: root("*"), role: "r", permissions: ["b"] });
      const res = await client.resolveRoles({ caller: VERIFIER, names: ["r"] });
      expect(res.roles[0]?.permissions.map((p) => p.slug)).toEqual(["b"]);
    });

    it("treats another workspace's roles as missing", async () => {
      const { client, seed } = harness();
      await seed.role("admin");
      const res = await client.resolveRoles({ caller: otherRoot(), names: ["admin"] });
      expect(res.roles).toEqual([]);
      expect(res.missing).toEqual(["admin"]);
    });
  });

  describe("400", () => {
    it("refuses an empty name", async () => {
      const { client } = harness();
      await expectReason(client.resolveRoles({ caller: VERIFIER, names: [""] }), ErrorReason.INVALID_INPUT, {
        location: "/roles/0",
      });
    });
  });
});
