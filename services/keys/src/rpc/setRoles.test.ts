import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, invalidAt, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

const updater = callerOf("ws_1", "api.*.update_key", "rbac.*.add_role_to_key", "rbac.*.remove_role_from_key");
const verifier = callerOf("ws_1", "api.*.verify_key");

async function keyWith(m: ReturnType<typeof memoryKeys>, roles: string[]) {
  const apiId = await m.seed.api();
  return { apiId, ...(await m.seed.key({ apiId, roles })) };
}

describe("setRoles", () => {
  describe("200", () => {
    it("replaces the whole set and answers it by name", async () => {
      const m = memoryKeys();
      for (const name of ["a", "b", "c"]) await m.rbac.role(name);
      const { keyId } = await keyWith(m, ["a", "b"]);
      const res = await m.client.setRoles({ caller: updater, keyId, roles: ["c", "b"] });
      expect(res.roles.map((r) => r.name)).toEqual(["b", "c"]);
      expect((await m.deps.store.findKeyById(keyId))?.roles).toEqual(["c", "b"]);
    });

    it("clears the set with an empty list, and is idempotent", async () => {
      const m = memoryKeys();
      await m.rbac.role("a");
      const { keyId } = await keyWith(m, ["a"]);
      expect((await m.client.setRoles({ caller: updater, keyId, roles: [] })).roles).toEqual([]);
      expect((await m.client.setRoles({ caller: updater, keyId, roles: [] })).roles).toEqual([]);
      expect((await m.deps.store.findKeyById(keyId))?.roles).toEqual([]);
    });

    it("reaches the very next verification", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader", ["docs.read"]);
      await m.rbac.role("writer", ["docs.write"]);
      const { keyId, key } = await keyWith(m, ["reader"]);
      expect((await m.client.verifyKey({ caller: verifier, key, permissions: "docs.read" })).code).toBe(
        VerifyCode.VALID,
      );
      await m.client.setRoles({ caller: updater, keyId, roles: ["writer"] });
      expect((await m.client.verifyKey({ caller: verifier, key, permissions: "docs.read" })).code).toBe(
        VerifyCode.INSUFFICIENT_PERMISSIONS,
      );
      expect((await m.client.verifyKey({ caller: verifier, key, permissions: "docs.write" })).code).toBe(
        VerifyCode.VALID,
      );
    });
  });

  describe("403", () => {
    it("answers INSUFFICIENT_PERMISSIONS without update_key", async () => {
      const m = memoryKeys();
      const { keyId, apiId } = await keyWith(m, []);
      const caller = callerOf("ws_1", "api.*.read_key", "rbac.*.remove_role_from_key");
      expect(await rejection(m.client.setRoles({ caller, keyId, roles: [] }))).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: `The root key lacks the permission 'api.${apiId}.update_key'.`,
      });
    });

    it("needs what adding and removing roles need, as it may do both, and changes nothing", async () => {
      const m = memoryKeys();
      await m.rbac.role("a");
      await m.rbac.role("b");
      const { keyId } = await keyWith(m, ["a"]);
      const adder = callerOf("ws_1", "api.*.update_key", "rbac.*.add_role_to_key");
      expect(await rejection(m.client.setRoles({ caller: adder, keyId, roles: ["a", "b"] }))).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: "The root key lacks the permission 'rbac.*.remove_role_from_key'.",
      });
      const remover = callerOf("ws_1", "api.*.update_key", "rbac.*.remove_role_from_key");
      expect(await rejection(m.client.setRoles({ caller: remover, keyId, roles: ["b"] }))).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: "The root key lacks the permission 'rbac.*.add_role_to_key'.",
      });
      expect((await m.deps.store.findKeyById(keyId))?.roles).toEqual(["a"]);
      // Naming none only removes.
      expect((await m.client.setRoles({ caller: remover, keyId, roles: [] })).roles).toEqual([]);
    });
  });

  describe("404", () => {
    it("answers ROLE_NOT_FOUND naming the first missing role, and the set stays as it was", async () => {
      const m = memoryKeys();
      await m.rbac.role("a");
      const { keyId } = await keyWith(m, ["a"]);
      expect(await rejection(m.client.setRoles({ caller: updater, keyId, roles: ["x", "a", "y"] }))).toEqual({
        reason: ErrorReason.ROLE_NOT_FOUND,
        message: "Role 'x' was not found.",
      });
      expect((await m.deps.store.findKeyById(keyId))?.roles).toEqual(["a"]);
    });
  });

  describe("400", () => {
    it("names a role name that is too long", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, []);
      expect(
        (await invalidAt(m.client.setRoles({ caller: updater, keyId, roles: ["r".repeat(129)] }))).location,
      ).toBe("/roles/0");
    });
  });
});
