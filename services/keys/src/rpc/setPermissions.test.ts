import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, invalidAt, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

const setter = callerOf(
  "ws_1",
  "api.*.update_key",
  "rbac.*.add_permission_to_key",
  "rbac.*.remove_permission_from_key",
);
const creator = callerOf(
  "ws_1",
  "api.*.update_key",
  "rbac.*.add_permission_to_key",
  "rbac.*.remove_permission_from_key",
  "rbac.*.create_permission",
);
const verifier = callerOf("ws_1", "api.*.verify_key");

async function keyWith(m: ReturnType<typeof memoryKeys>, permissions: string[]) {
  const apiId = await m.seed.api();
  return { apiId, ...(await m.seed.key({ apiId, permissions })) };
}

describe("setPermissions", () => {
  describe("200", () => {
    it("replaces the whole set, creating missing slugs with rbac.*.create_permission", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, ["old.a", "keep"]);
      const res = await m.client.setPermissions({ caller: creator, keyId, permissions: ["keep", "new.b"] });
      expect(res.permissions.map((p) => p.slug)).toEqual(["keep", "new.b"]);
      expect((await m.deps.store.findKeyById(keyId))?.permissions).toEqual(["keep", "new.b"]);
    });

    it("clears the set with an empty list", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, ["a", "b"]);
      expect((await m.client.setPermissions({ caller: setter, keyId, permissions: [] })).permissions).toEqual(
        [],
      );
      expect((await m.deps.store.findKeyById(keyId))?.permissions).toEqual([]);
    });

    it("is idempotent: the same set twice answers the same list", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, ["a", "b"]);
      const first = await m.client.setPermissions({ caller: setter, keyId, permissions: ["b", "a", "b"] });
      const second = await m.client.setPermissions({ caller: setter, keyId, permissions: ["b", "a"] });
      expect(second.permissions).toEqual(first.permissions);
      expect(first.permissions.map((p) => p.slug)).toEqual(["a", "b"]);
    });

    it("reaches the very next verification", async () => {
      const m = memoryKeys();
      const { keyId, key } = await keyWith(m, ["a"]);
      expect((await m.client.verifyKey({ caller: verifier, key, permissions: "a" })).code).toBe(
        VerifyCode.VALID,
      );
      await m.client.setPermissions({ caller: creator, keyId, permissions: ["b"] });
      expect((await m.client.verifyKey({ caller: verifier, key, permissions: "a" })).code).toBe(
        VerifyCode.INSUFFICIENT_PERMISSIONS,
      );
      expect((await m.client.verifyKey({ caller: verifier, key, permissions: "b" })).code).toBe(
        VerifyCode.VALID,
      );
    });
  });

  describe("403", () => {
    it("names rbac.*.create_permission for a missing slug and leaves the set as it was", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, ["a"]);
      const failure = await rejection(
        m.client.setPermissions({ caller: setter, keyId, permissions: ["missing"] }),
      );
      expect(failure.reason).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
      expect(failure.message).toContain("'rbac.*.create_permission'");
      expect((await m.deps.store.findKeyById(keyId))?.permissions).toEqual(["a"]);
    });

    it("needs both rbac.*.add_permission_to_key and rbac.*.remove_permission_from_key", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, ["a"]);
      const caller = callerOf("ws_1", "api.*.update_key", "rbac.*.add_permission_to_key");
      expect(await rejection(m.client.setPermissions({ caller, keyId, permissions: ["a"] }))).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: "The root key lacks the permission 'rbac.*.remove_permission_from_key'.",
      });
    });
  });

  describe("404", () => {
    it("answers KEY_NOT_FOUND for a deleted key", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, ["a"]);
      await m.client.deleteKey({ caller: m.admin, keyId });
      expect(
        (await rejection(m.client.setPermissions({ caller: setter, keyId, permissions: [] }))).reason,
      ).toBe(ErrorReason.KEY_NOT_FOUND);
    });
  });

  describe("400", () => {
    it("names a slug that is too long", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, []);
      expect(
        (
          await invalidAt(
            m.client.setPermissions({ caller: setter, keyId, permissions: ["a", "x".repeat(129)] }),
          )
        ).location,
      ).toBe("/permissions/1");
    });
  });
});
