import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, invalidAt, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

const adder = callerOf("ws_1", "api.*.update_key", "rbac.*.add_permission_to_key");
const creator = callerOf(
  "ws_1",
  "api.*.update_key",
  "rbac.*.add_permission_to_key",
  "rbac.*.create_permission",
);
const verifier = callerOf("ws_1", "api.*.verify_key");

async function keyWith(m: ReturnType<typeof memoryKeys>, permissions: string[] = []) {
  const apiId = await m.seed.api();
  return { apiId, ...(await m.seed.key({ apiId, permissions })) };
}

describe("addPermissions", () => {
  describe("200", () => {
    it("adds slugs, creating missing ones with rbac.*.create_permission, and answers the direct list by slug", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, ["c.read"]);
      const res = await m.client.addPermissions({
        caller: creator,
        keyId,
        permissions: ["b.write", "a.read"],
      });
      expect(res.permissions.map((p) => [p.slug, p.name])).toEqual([
        ["a.read", "a.read"],
        ["b.write", "b.write"],
        ["c.read", "c.read"],
      ]);
      expect(res.permissions.every((p) => p.id.startsWith("perm_"))).toBe(true);
      expect((await m.client.getKey({ caller: m.admin, keyId })).key?.permissions).toEqual([
        "c.read",
        "b.write",
        "a.read",
      ]);
    });

    it("adds an existing permission without rbac.*.create_permission, answering its description", async () => {
      const m = memoryKeys();
      const permissionId = await m.rbac.permission("docs.read", "Read documents");
      const { keyId } = await keyWith(m);
      const res = await m.client.addPermissions({ caller: adder, keyId, permissions: ["docs.read"] });
      expect(res.permissions).toEqual([
        expect.objectContaining({
          id: permissionId,
          name: "docs.read",
          slug: "docs.read",
          description: "Read documents",
        }),
      ]);
    });

    it("is idempotent: adding a held slug again changes nothing", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m, ["a.read"]);
      const first = await m.client.addPermissions({
        caller: adder,
        keyId,
        permissions: ["a.read", "a.read"],
      });
      const second = await m.client.addPermissions({ caller: adder, keyId, permissions: ["a.read"] });
      expect(second.permissions).toEqual(first.permissions);
      expect(first.permissions.map((p) => p.slug)).toEqual(["a.read"]);
      expect((await m.deps.store.findKeyById(keyId))?.permissions).toEqual(["a.read"]);
    });

    it("reaches the very next verification", async () => {
      const m = memoryKeys();
      const { keyId, key } = await keyWith(m);
      const verify = () => m.client.verifyKey({ caller: verifier, key, permissions: "docs.read" });
      expect((await verify()).code).toBe(VerifyCode.INSUFFICIENT_PERMISSIONS);
      await m.client.addPermissions({ caller: creator, keyId, permissions: ["docs.read"] });
      expect((await verify()).code).toBe(VerifyCode.VALID);
    });
  });

  describe("403", () => {
    it("names rbac.*.create_permission for a missing slug, and neither changes the key nor creates anything", async () => {
      const m = memoryKeys();
      await m.rbac.permission("a.read");
      const { keyId } = await keyWith(m);
      const failure = await rejection(
        m.client.addPermissions({ caller: adder, keyId, permissions: ["a.read", "new.thing"] }),
      );
      expect(failure.reason).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
      expect(failure.message).toContain("'rbac.*.create_permission'");
      expect(failure.message).toContain("'new.thing'");
      expect((await m.deps.store.findKeyById(keyId))?.permissions).toEqual([]);
      expect(
        (await rejection(m.identity.getPermission({ caller: m.admin, permission: "new.thing" }))).reason,
      ).toBe(ErrorReason.PERMISSION_NOT_FOUND);
    });

    it("names rbac.*.add_permission_to_key, and the update_key the key's API needs", async () => {
      const m = memoryKeys();
      const { keyId, apiId } = await keyWith(m);
      expect(
        await rejection(
          m.client.addPermissions({
            caller: callerOf("ws_1", "api.*.update_key"),
            keyId,
            permissions: ["a"],
          }),
        ),
      ).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: "The root key lacks the permission 'rbac.*.add_permission_to_key'.",
      });
      expect(
        await rejection(
          m.client.addPermissions({
            caller: callerOf("ws_1", "rbac.*.add_permission_to_key"),
            keyId,
            permissions: ["a"],
          }),
        ),
      ).toEqual({
        reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
        message: `The root key lacks the permission 'api.${apiId}.update_key'.`,
      });
    });
  });

  describe("404", () => {
    it("answers KEY_NOT_FOUND for an unknown key and for another workspace's key", async () => {
      const m = memoryKeys();
      const theirs = await m.seed.key({ apiId: await m.seed.api("ws_2"), workspaceId: "ws_2" });
      for (const keyId of ["key_unknown", theirs.keyId]) {
        expect(
          (await rejection(m.client.addPermissions({ caller: creator, keyId, permissions: ["a"] }))).reason,
        ).toBe(ErrorReason.KEY_NOT_FOUND);
      }
    });
  });

  describe("400", () => {
    it("names the field: keyId, an empty list, an invalid slug", async () => {
      const m = memoryKeys();
      const { keyId } = await keyWith(m);
      expect(
        (await invalidAt(m.client.addPermissions({ caller: creator, keyId: "", permissions: ["a"] })))
          .location,
      ).toBe("/keyId");
      expect(
        (await invalidAt(m.client.addPermissions({ caller: creator, keyId, permissions: [] }))).location,
      ).toBe("/permissions");
      expect(
        await invalidAt(m.client.addPermissions({ caller: creator, keyId, permissions: ["ok", "not ok"] })),
      ).toEqual({
        location: "/permissions/1",
        message: "'not ok' is not a valid permission slug: use letters, digits and _ : - . *",
      });
    });
  });
});
