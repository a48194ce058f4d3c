import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, invalidAt, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

const adder = callerOf("ws_1", "api.*.update_key", "rbac.*.add_role_to_key");
const verifier = callerOf("ws_1", "api.*.verify_key");

async function keyWith(m: ReturnType<typeof memoryKeys>, roles: string[] = []) {
  const apiId = await m.seed.api();
  return { apiId, ...(await m.seed.key({ apiId, roles })) };
}

describe("addRoles", () => {
  describe("200", () => {
    it("adds roles and answers all the key's roles by name, each with its permissions by slug", async () => {
      const m = memoryKeys();
      const writerId = await m.rbac.role("writer", ["docs.write", "docs.read"]);
      const readerId = await m.rbac.role("reader", ["docs.read"]);
      const { keyId } = await keyWith(m, ["writer"]);
      const res = await m.client.addRoles({ caller: adder, keyId, roles: ["reader"] });
      expect(res.roles.map((r) => [r.id, r.name, r.permissions.map((p) => p.slug)])).toEqual([
        [readerId, "reader", ["docs.read"]],
        [writerId, "writer", ["docs.read", "docs.write"]],
      ]);
      expect(res.roles[0]?.permissions[0]).toMatchObject({ name: "docs.read", slug: "docs.read" });
      expect((await m.deps.store.findKeyById(keyId))?.roles).toEqual(["writer", "reader"]);
    });

    it("is idempotent: a role the key has is not added twice", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader", ["docs.read"]);
      const { keyId } = await keyWith(m, ["reader"]);
      const res = await m.client.addRoles({ caller: adder, keyId, roles: ["reader", "reader"] });
      expect(res.roles.map((r) => r.name)).toEqual(["reader"]);
      expect((await m.deps.store.findKeyById(keyId))?.roles).toEqual(["reader"]);
    });

    it("reaches the very next verification", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader", ["docs.read"]);
      const { keyId, key } = await keyWith(m);
      const verify = () => m.client.verifyKey({ caller: verifier, key, permissions: "docs.read" });
      expect((await verify()).code).toBe(VerifyCode.INSUFFICIENT_PERMISSIONS);
      await m.client.addRoles({ caller: adder, keyId, roles: ["reader"] });
      expect(await verify()).toMatchObject({ code: VerifyCode.VALID, roles: ["reader"] });
    });
  });

  describe("403", () => {
    it("names rbac.*.add_role_to_key", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader");
      const { keyId } = await keyWith(m);
      expect(
        await rejection(
          m.client.addRoles({ caller: callerOf("ws_1", "api.*.update_key"), keyId, roles: ["reader"] }),
        ),
      ).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: "The root key lacks the permission 'rbac.*.add_role_to_key'.",
      });
    });
  });

  describe("404", () => {
    it("answers ROLE_NOT_FOUND naming a missing role, never creates it, and changes nothing", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader");
      const { keyId } = await keyWith(m);
      expect(
        await rejection(m.client.addRoles({ caller: adder, keyId, roles: ["reader", "ghost"] })),
      ).toEqual({
        reason: ErrorReason.ROLE_NOT_FOUND,
        message: "Role 'ghost' was not found.",
      });
      expect((await m.deps.store.findKeyById(keyId))?.roles).toEqual([]);
      expect((await rejection(m.identity.getRole({ caller: m.admin, role: "ghost" }))).reason).toBe(
        ErrorReason.ROLE_NOT_FOUND,
      );
    });

    it("does not see another workspace's role or key", async () => {
      const m = memoryKeys();
      await m.rbac.role("theirs", [], "ws_2");
      const { keyId } = await keyWith(m);
      expect((await rejection(m.client.addRoles({ caller: adder, keyId, roles: ["theirs"] }))).reason).toBe(
        ErrorReason.ROLE_NOT_FOUND,
      );
      const theirKey = await m.seed.key({ apiId: await m.seed.api("ws_2"), workspaceId: "ws_2" });
      expect(
        (await rejection(m.client.addRoles({ caller: adder, keyId: theirKey.keyId, roles: ["theirs"] })))
          .reason,
      ).toBe(ErrorReason.KEY_NOT_FOUND);
    });
  });

  describe("400", () => {
    it("names the field: an empty list, an empty name, more than 100 roles", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m);
      expect((await invalidAt(m.client.addRoles({ caller: adder, keyId, roles: [] }))).location).toBe(
        "/roles",
      );
      expect((await invalidAt(m.client.addRoles({ caller: adder, keyId, roles: ["a", ""] }))).location).toBe(
        "/roles/1",
      );
      const many = Array.from({ length: 101 }, (_, i) => `r${i}`);
      expect(await invalidAt(m.client.addRoles({ caller: adder, keyId, roles: many }))).toEqual({
        location: "/roles",
        message: "at most 100 roles are allowed, got 101",
      });
    });
  });
});
