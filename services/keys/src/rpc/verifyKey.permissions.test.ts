import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { rejection } from "../../testing/in-memory-keys.ts";
import { limit, verificationKit } from "../../testing/verification.ts";

describe("verifyKey permission query over direct and role permissions", () => {
  describe("VALID", () => {
    it("grants through a role, answering direct and role permissions and the role names", async () => {
      const { seed, verify } = verificationKit();
      await seed.role("editor", ["documents.read", "documents.write"]);
      const { key } = await seed.key({
        apiId: await seed.api(),
        permissions: ["billing.read"],
        roles: ["editor"],
      });
      const res = await verify(key, { permissions: "documents.write AND billing.read" });
      expect(res).toMatchObject({
        valid: true,
        code: VerifyCode.VALID,
        permissions: ["billing.read", "documents.read", "documents.write"],
        roles: ["editor"],
      });
    });

    it("grants every sub-permission of a held wildcard, directly or through a role", async () => {
      const { seed, verify } = verificationKit();
      await seed.role("billing-admin", ["billing.*"]);
      const { key } = await seed.key({
        apiId: await seed.api(),
        permissions: ["documents.*"],
        roles: ["billing-admin"],
      });
      const granted = await verify(key, {
        permissions: "documents.read AND documents.write.own AND billing.refund",
      });
      expect(granted.code).toBe(VerifyCode.VALID);
      expect((await verify(key, { permissions: "documents" })).code).toBe(
        VerifyCode.INSUFFICIENT_PERMISSIONS,
      );
      expect((await verify(key, { permissions: "admin.read" })).code).toBe(
        VerifyCode.INSUFFICIENT_PERMISSIONS,
      );
    });

    it("reads AND tighter than OR, operators in any case", async () => {
      const { seed, verify } = verificationKit();
      const { key } = await seed.key({ apiId: await seed.api(), permissions: ["c"] });
      expect((await verify(key, { permissions: "a and b OR c" })).code).toBe(VerifyCode.VALID);
      expect((await verify(key, { permissions: "a AnD (b or c)" })).code).toBe(
        VerifyCode.INSUFFICIENT_PERMISSIONS,
      );
    });
  });

  describe("INSUFFICIENT_PERMISSIONS", () => {
    it("spends neither credits nor rate-limit tokens on a failed query", async () => {
      const { seed, verify, balance } = verificationKit();
      await seed.role("viewer", ["documents.read"]);
      const { keyId, key } = await seed.key({
        apiId: await seed.api(),
        roles: ["viewer"],
        credits: 5,
        ratelimits: [limit("calls", 1, true)],
      });
      const denied = await verify(key, { permissions: "documents.write" });
      expect(denied).toMatchObject({ valid: false, code: VerifyCode.INSUFFICIENT_PERMISSIONS, keyId });
      expect(denied.credits).toBeUndefined();
      expect(denied.ratelimits).toEqual([]);
      expect(await balance(keyId)).toBe(5);
      // The one call the limit allows is still there.
      expect((await verify(key, { permissions: "documents.read" })).code).toBe(VerifyCode.VALID);
      expect((await verify(key)).code).toBe(VerifyCode.RATE_LIMITED);
      expect(await balance(keyId)).toBe(4);
    });

    it("applies a role's new permissions at the next verification", async () => {
      const { seed, verify, identity, admin } = verificationKit();
      await seed.role("viewer", ["documents.read"]);
      const { key } = await seed.key({ apiId: await seed.api(), roles: ["viewer"] });
      expect((await verify(key, { permissions: "documents.write" })).code).toBe(
        VerifyCode.INSUFFICIENT_PERMISSIONS,
      );
      await identity.setRolePermissions({
        caller: admin,
        role: "viewer",
        permissions: ["documents.read", "documents.write"],
      });
      expect((await verify(key, { permissions: "documents.write" })).code).toBe(VerifyCode.VALID);
      await identity.setRolePermissions({ caller: admin, role: "viewer", permissions: [] });
      expect((await verify(key, { permissions: "documents.read" })).code).toBe(
        VerifyCode.INSUFFICIENT_PERMISSIONS,
      );
    });

    it("stops granting through a deleted role, which no longer appears in roles", async () => {
      const { seed, verify, identity, admin } = verificationKit();
      await seed.role("viewer", ["documents.read"]);
      const { key } = await seed.key({ apiId: await seed.api(), roles: ["viewer"] });
      expect((await verify(key, { permissions: "documents.read" })).roles).toEqual(["viewer"]);
      await identity.deleteRole({ caller: admin, role: "viewer" });
      const res = await verify(key, { permissions: "documents.read" });
      expect(res).toMatchObject({ code: VerifyCode.INSUFFICIENT_PERMISSIONS, roles: [], permissions: [] });
    });
  });

  describe("PERMISSIONS_QUERY_SYNTAX", () => {
    it("answers a syntax error saying where, before anything is spent", async () => {
      const { seed, verify, balance } = verificationKit();
      const { keyId, key } = await seed.key({ apiId: await seed.api(), credits: 1 });
      expect(await rejection(verify(key, { permissions: "(a AND b" }))).toEqual({
        reason: ErrorReason.PERMISSIONS_QUERY_SYNTAX,
        message:
          "The parenthesis opened at position 0 is not closed: expected ')' but found the end at position 8.",
      });
      expect(await rejection(verify(key, { permissions: "a AND ()" }))).toMatchObject({
        reason: ErrorReason.PERMISSIONS_QUERY_SYNTAX,
        message: "Empty parentheses found at position 6.",
      });
      expect(await balance(keyId)).toBe(1);
    });

    it("refuses a query longer than 1000 characters", async () => {
      const { seed, verify } = verificationKit();
      const { key } = await seed.key({ apiId: await seed.api() });
      const { reason, message } = await rejection(verify(key, { permissions: "a".repeat(1001) }));
      expect(reason).toBe(ErrorReason.PERMISSIONS_QUERY_SYNTAX);
      expect(message).toContain("at most 1000 characters");
    });
  });

  describe("caching", () => {
    it("asks the identity service once for a key's roles, and again only after a change", async () => {
      const { seed, verify, calls, identity, admin } = verificationKit();
      await seed.role("viewer", ["documents.read"]);
      await seed.role("other", ["x"]);
      const { key } = await seed.key({ apiId: await seed.api(), roles: ["viewer"] });
      await verify(key);
      await verify(key);
      await verify(key);
      expect(calls.get("ResolveRoles")).toBe(1);
      await identity.setRolePermissions({ caller: admin, role: "other", permissions: ["y"] });
      await verify(key);
      expect(calls.get("ResolveRoles")).toBe(2);
    });

    it("resolves the roles of a whole batch in one call", async () => {
      const { seed, keys, verifier, calls } = verificationKit();
      await seed.role("viewer", ["documents.read"]);
      await seed.role("editor", ["documents.write"]);
      const apiId = await seed.api();
      const a = await seed.key({ apiId, roles: ["viewer"] });
      const b = await seed.key({ apiId, roles: ["editor", "viewer"] });
      const res = await keys.verifyKeyBatch({
        callers: [verifier],
        items: [a, b, a].map(({ key }) => ({
          callerIndex: 0,
          request: { key, permissions: "documents.write" },
        })),
      });
      expect(
        res.results.map((r) => (r.result.case === "response" ? VerifyCode[r.result.value.code] : "error")),
      ).toEqual(["INSUFFICIENT_PERMISSIONS", "VALID", "INSUFFICIENT_PERMISSIONS"]);
      expect(calls.get("ResolveRoles")).toBe(1);
    });
  });
});
