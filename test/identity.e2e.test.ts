import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./testing/process-stack.ts";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

describe("identities, permissions and roles through the gateway (separate processes)", () => {
  it("creates an identity and answers 409 for a duplicate externalId", async () => {
    const created = await stack.call("identities.createIdentity", {
      externalId: "user_e2e",
      meta: { plan: "pro" },
    });
    expect(created.status).toBe(200);
    expect(created.body.data.identityId).toMatch(/^id_/);
    const read = await stack.call("identities.getIdentity", { identity: "user_e2e" });
    expect(read.body.data).toMatchObject({
      id: created.body.data.identityId,
      externalId: "user_e2e",
      meta: { plan: "pro" },
    });
    const dup = await stack.call("identities.createIdentity", { externalId: "user_e2e" });
    expect(dup.status).toBe(409);
    expect(dup.body.error.type).toBe("https://unkey.com/docs/errors/unkey/data/identity_already_exists");
  });

  it("creates permissions and a role holding them", async () => {
    expect(
      (await stack.call("permissions.createPermission", { name: "read", slug: "documents.read" })).status,
    ).toBe(200);
    const role = await stack.call("permissions.createRole", {
      name: "reader",
      permissions: ["documents.read"],
    });
    expect(role.status).toBe(200);
    const read = await stack.call("permissions.getRole", { role: "reader" });
    expect(read.body.data.permissions.map((p: { slug: string }) => p.slug)).toEqual(["documents.read"]);
  });

  it("verifies permission queries over a key's roles and direct permissions, and applies changes at once", async () => {
    const apiId = (await stack.call("apis.createApi", { name: "rbac" })).body.data.apiId;
    await stack.call("permissions.createRole", { name: "editor", permissions: ["documents.read"] });
    const created = await stack.call("keys.createKey", { apiId, roles: ["editor"], externalId: "user_rbac" });
    expect(created.status).toBe(200);
    const { key, keyId } = created.body.data;

    const read = await stack.call("keys.verifyKey", { key, permissions: "documents.read" });
    expect(read.body.data).toMatchObject({ valid: true, code: "VALID", roles: ["editor"] });
    expect(read.body.data.identity).toMatchObject({ externalId: "user_rbac" });
    const write = await stack.call("keys.verifyKey", {
      key,
      permissions: "documents.read AND documents.write",
    });
    expect(write.body.data).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });

    // A held wildcard grants every sub-permission (docs/api.md), created on the fly with rbac.*.create_permission.
    const added = await stack.call("keys.addPermissions", { keyId, permissions: ["documents.*"] });
    expect(added.status).toBe(200);
    expect(added.body.data.map((p: { slug: string }) => p.slug)).toEqual(["documents.*"]);
    expect((await stack.call("keys.verifyKey", { key, permissions: "documents.write" })).body.data.code).toBe(
      "VALID",
    );

    const syntax = await stack.call("keys.verifyKey", { key, permissions: "documents.read AND (" });
    expect(syntax.status).toBe(400);

    expect((await stack.call("keys.setRoles", { keyId, roles: [] })).body.data).toEqual([]);
    const missing = await stack.call("keys.addRoles", { keyId, roles: ["no-such-role"] });
    expect(missing.status).toBe(404);
    expect(missing.body.error.type).toBe("https://unkey.com/docs/errors/unkey/data/role_not_found");
  });

  it("shares an identity's rate limit between its keys and answers RATE_LIMITED without spending credits", async () => {
    const apiId = (await stack.call("apis.createApi", { name: "limits" })).body.data.apiId;
    const identity = await stack.call("identities.createIdentity", {
      externalId: "team_limits",
      ratelimits: [{ name: "requests", limit: 3, duration: 60_000, autoApply: true }],
    });
    expect(identity.status).toBe(200);
    const a = (
      await stack.call("keys.createKey", { apiId, externalId: "team_limits", credits: { remaining: 10 } })
    ).body.data;
    const b = (await stack.call("keys.createKey", { apiId, externalId: "team_limits" })).body.data;
    const codes = [];
    for (const key of [a.key, b.key, a.key, b.key])
      codes.push((await stack.call("keys.verifyKey", { key })).body.data);
    expect(codes.map((d) => d.code)).toEqual(["VALID", "VALID", "VALID", "RATE_LIMITED"]);
    expect(codes[3].ratelimits).toEqual([
      expect.objectContaining({ name: "requests", limit: 3, remaining: 0, exceeded: true, autoApply: true }),
    ]);
    const limited = await stack.call("keys.verifyKey", { key: a.key });
    expect(limited.body.data.code).toBe("RATE_LIMITED");
    expect((await stack.call("keys.getKey", { keyId: a.keyId })).body.data.credits.remaining).toBe(8);
    const unknown = await stack.call("keys.verifyKey", { key: a.key, ratelimits: [{ name: "nope" }] });
    expect(unknown.status).toBe(412);
  });
});
