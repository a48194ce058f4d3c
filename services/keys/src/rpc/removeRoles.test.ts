import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, invalidAt, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

const updater = callerOf("ws_1", "api.*.update_key", "rbac.*.remove_role_from_key");
const verifier = callerOf("ws_1", "api.*.verify_key");

async function keyWith(m: ReturnType<typeof memoryKeys>, roles: string[]) {
  const apiId = await m.seed.api();
  return { apiId, ...(await m.seed.key({ apiId, roles })) };
}

describe("removeRoles", () => {
  describe("200", () => {
    it("removes roles and answers the remaining roles", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader", ["docs.read"]);
      await m.rbac.role("writer", ["docs.write"]);
      const { keyId } = await keyWith(m, ["reader", "writer"]);
      const res = await m.client.removeRoles({ caller: updater, keyId, roles: ["reader"] });
      expect(res.roles.map((r) => [r.name, r.permissions.map((p) => p.slug)])).toEqual([
        ["writer", ["docs.write"]],
      ]);
      expect((await m.deps.store.findKeyById(keyId))?.roles).toEqual(["writer"]);
    });

    it("is idempotent: an existing role the key does not have is ignored", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader");
      await m.rbac.role("writer");
      const { keyId } = await keyWith(m, ["writer"]);
      const res = await m.client.removeRoles({ caller: updater, keyId, roles: ["reader"] });
      expect(res.roles.map((r) => r.name)).toEqual(["writer"]);
    });

    it("reaches the very next verification", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader", ["docs.read"]);
      const { keyId, key } = await keyWith(m, ["reader"]);
      const verify = () => m.client.verifyKey({ caller: verifier, key, permissions: "docs.read" });
      expect((await verify()).code).toBe(VerifyCode.VALID);
      await m.client.removeRoles({ caller: updater, keyId, roles: ["reader"] });
      expect((await verify()).code).toBe(VerifyCode.INSUFFICIENT_PERMISSIONS);
    });
  });

  describe("403", () => {
    it("names the update_key the key's API needs", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader");
      const { keyId, apiId } = await keyWith(m, ["reader"]);
      expect(
        await rejection(
          m.client.removeRoles({
            caller: callerOf("ws_1", "rbac.*.remove_role_from_key"),
            keyId,
            roles: ["reader"],
          }),
        ),
      ).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: `The root key lacks the permission 'api.${apiId}.update_key'.`,
      });
    });

    it("names rbac.*.remove_role_from_key, as addRoles names adding, and changes nothing", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader");
      const { keyId } = await keyWith(m, ["reader"]);
      expect(
        await rejection(
          m.client.removeRoles({ caller: callerOf("ws_1", "api.*.update_key"), keyId, roles: ["reader"] }),
        ),
      ).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: "The root key lacks the permission 'rbac.*.remove_role_from_key'.",
      });
      expect((await m.deps.store.findKeyById(keyId))?.roles).toEqual(["reader"]);
    });
  });

  describe("404", () => {
    it("answers ROLE_NOT_FOUND naming a role that does not exist, and changes nothing", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader");
      const { keyId } = await keyWith(m, ["reader"]);
      expect(
        await rejection(m.client.removeRoles({ caller: updater, keyId, roles: ["reader", "ghost"] })),
      ).toEqual({
        reason: ErrorReason.ROLE_NOT_FOUND,
        message: "Role 'ghost' was not found.",
      });
      expect((await m.deps.store.findKeyById(keyId))?.roles).toEqual(["reader"]);
    });

    it("answers KEY_NOT_FOUND for an unknown key", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader");
      expect(
        (await rejection(m.client.removeRoles({ caller: updater, keyId: "key_x", roles: ["reader"] })))
          .reason,
      ).toBe(ErrorReason.KEY_NOT_FOUND);
    });
  });

  describe("400", () => {
    it("names the field: keyId, an empty list", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, []);
      expect(
        (await invalidAt(m.client.removeRoles({ caller: updater, keyId: "", roles: ["a"] }))).location,
      ).toBe("/keyId");
      expect((await invalidAt(m.client.removeRoles({ caller: updater, keyId, roles: [] }))).location).toBe(
        "/roles",
      );
    });
  });
});
