import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, invalidAt, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

const remover = callerOf("ws_1", "api.*.update_key", "rbac.*.remove_permission_from_key");
const verifier = callerOf("ws_1", "api.*.verify_key");

async function keyWith(m: ReturnType<typeof memoryKeys>, permissions: string[], roles: string[] = []) {
  const apiId = await m.seed.api();
  return { apiId, ...(await m.seed.key({ apiId, permissions, roles })) };
}

describe("removePermissions", () => {
  describe("200", () => {
    it("removes slugs and answers the remaining direct permissions by slug", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, ["c", "b", "a"]);
      const res = await m.client.removePermissions({ caller: remover, keyId, permissions: ["b"] });
      expect(res.permissions.map((p) => p.slug)).toEqual(["a", "c"]);
      expect((await m.deps.store.findKeyById(keyId))?.permissions).toEqual(["c", "a"]);
    });

    it("is idempotent: a slug the key does not hold, or that names no permission, is ignored", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, ["a"]);
      const res = await m.client.removePermissions({ caller: remover, keyId, permissions: ["b", "nowhere"] });
      expect(res.permissions.map((p) => p.slug)).toEqual(["a"]);
      await m.client.removePermissions({ caller: remover, keyId, permissions: ["a"] });
      expect(
        (await m.client.removePermissions({ caller: remover, keyId, permissions: ["a"] })).permissions,
      ).toEqual([]);
    });

    it("leaves permissions reached through roles alone", async () => {
      const m = memoryKeys();
      await m.rbac.role("reader", ["docs.read"]);
      const { keyId, key } = await keyWith(m, ["docs.read"], ["reader"]);
      const res = await m.client.removePermissions({ caller: remover, keyId, permissions: ["docs.read"] });
      expect(res.permissions).toEqual([]);
      expect((await m.client.verifyKey({ caller: verifier, key, permissions: "docs.read" })).code).toBe(
        VerifyCode.VALID,
      );
    });

    it("reaches the very next verification", async () => {
      const m = memoryKeys();
      const { keyId, key } = await keyWith(m, ["docs.read"]);
      const verify = () => m.client.verifyKey({ caller: verifier, key, permissions: "docs.read" });
      expect((await verify()).code).toBe(VerifyCode.VALID);
      await m.client.removePermissions({ caller: remover, keyId, permissions: ["docs.read"] });
      expect((await verify()).code).toBe(VerifyCode.INSUFFICIENT_PERMISSIONS);
    });
  });

  describe("403", () => {
    it("names rbac.*.remove_permission_from_key and changes nothing", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, ["a"]);
      expect(
        await rejection(
          m.client.removePermissions({
            caller: callerOf("ws_1", "api.*.update_key"),
            keyId,
            permissions: ["a"],
          }),
        ),
      ).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: "The root key lacks the permission 'rbac.*.remove_permission_from_key'.",
      });
      expect((await m.deps.store.findKeyById(keyId))?.permissions).toEqual(["a"]);
    });

    it("names the update_key the key's API needs", async () => {
      const m = memoryKeys();
      const { keyId, apiId } = await keyWith(m, ["a"]);
      const caller = callerOf("ws_1", "rbac.*.remove_permission_from_key", "api.api_other.update_key");
      expect(await rejection(m.client.removePermissions({ caller, keyId, permissions: ["a"] }))).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: `The root key lacks the permission 'api.${apiId}.update_key'.`,
      });
    });
  });

  describe("404", () => {
    it("answers KEY_NOT_FOUND for another workspace's key", async () => {
      const m = memoryKeys();
      const theirs = await m.seed.key({
        apiId: await m.seed.api("ws_2"),
        workspaceId: "ws_2",
        permissions: ["a"],
      });
      expect(
        (
          await rejection(
            m.client.removePermissions({ caller: remover, keyId: theirs.keyId, permissions: ["a"] }),
          )
        ).reason,
      ).toBe(ErrorReason.KEY_NOT_FOUND);
      expect((await m.deps.store.findKeyById(theirs.keyId))?.permissions).toEqual(["a"]);
    });
  });

  describe("400", () => {
    it("names the field: an empty list, an empty slug", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, ["a"]);
      expect(
        (await invalidAt(m.client.removePermissions({ caller: remover, keyId, permissions: [] }))).location,
      ).toBe("/permissions");
      expect(
        (await invalidAt(m.client.removePermissions({ caller: remover, keyId, permissions: [""] }))).location,
      ).toBe("/permissions/0");
    });
  });
});
