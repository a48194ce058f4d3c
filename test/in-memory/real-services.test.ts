import { listen } from "@latchkey/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inMemoryStack } from "../testing/in-memory-stack.ts";

describe("the gateway over the real keys and ratelimit services, through a real socket", () => {
  const { gateway, rootKey: root } = inMemoryStack("gateway_flow");
  let server: Awaited<ReturnType<typeof listen>>;
  const post = async (operation: string, body: unknown, key = root) => {
    const res = await fetch(`http://127.0.0.1:${server.port}/v2/${operation}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  beforeAll(async () => {
    server = await listen(gateway, 0, "127.0.0.1");
  });
  afterAll(() => server.close());

  it("creates an API and a key with credits, verifies it until the credits run out", async () => {
    const api = await post("apis.createApi", { name: "payments" });
    expect(api.status).toBe(200);
    const { apiId } = api.body.data;
    expect((await post("apis.getApi", { apiId })).body.data).toEqual({
      id: apiId,
      name: "payments",
      keyFormat: "plain",
      leakPolicy: "revoke",
      expiringNoticeDays: 7,
    });

    const created = await post("keys.createKey", {
      apiId,
      prefix: "sk",
      name: "Acme",
      meta: { plan: "pro" },
      credits: { remaining: 2 },
    });
    expect(created.status).toBe(200);
    expect(created.body.data.key).toMatch(/^sk_/);
    const { key, keyId } = created.body.data;

    const first = await post("keys.verifyKey", { key });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({
      valid: true,
      code: "VALID",
      keyId,
      name: "Acme",
      meta: { plan: "pro" },
      credits: 1,
      enabled: true,
    });
    expect((await post("keys.verifyKey", { key })).body.data).toMatchObject({ valid: true, credits: 0 });
    expect((await post("keys.verifyKey", { key })).body.data).toMatchObject({
      valid: false,
      code: "USAGE_EXCEEDED",
      credits: 0,
    });
    expect((await post("keys.verifyKey", { key: "sk_nope" })).body.data).toEqual({
      valid: false,
      code: "NOT_FOUND",
    });

    const read = await post("keys.getKey", { keyId });
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({ keyId, name: "Acme", credits: { remaining: 0 } });
  });

  it("answers 404 api_not_found for a key on a missing API", async () => {
    const res = await post("keys.createKey", { apiId: "api_missing" });
    expect(res.status).toBe(404);
    expect(res.body.error.type).toBe("https://unkey.com/docs/errors/unkey/data/api_not_found");
  });

  it("limits and overrides under both spellings of the rate-limit group", async () => {
    const check = { namespace: "email", identifier: "user_1", limit: 2, duration: 60_000 };
    expect((await post("ratelimits.limit", check)).body.data).toMatchObject({ success: true, remaining: 1 });
    expect((await post("ratelimit.limit", check)).body.data).toMatchObject({ success: true, remaining: 0 });
    expect((await post("ratelimits.limit", check)).body.data).toMatchObject({ success: false, remaining: 0 });

    const set = await post("ratelimit.setOverride", { ...check, identifier: "vip_*", limit: 100 });
    expect(set.status).toBe(200);
    const listed = await post("ratelimit.listOverrides", { namespace: "email" });
    expect(listed.body.data).toEqual([
      { overrideId: set.body.data.overrideId, identifier: "vip_*", limit: 100, duration: 60_000 },
    ]);
    expect(listed.body.pagination).toEqual({ hasMore: false });
    const contract = await post("ratelimits.listOverrides", { namespace: "email" });
    expect(contract.body.data).toEqual({ overrides: listed.body.data });
    expect((await post("ratelimits.limit", { ...check, identifier: "vip_7" })).body.data).toMatchObject({
      success: true,
      limit: 100,
      overrideId: set.body.data.overrideId,
    });
    expect(
      (await post("ratelimits.deleteOverride", { namespace: "email", identifier: "vip_*" })).body.data,
    ).toEqual({});
    expect((await post("ratelimit.getOverride", { namespace: "email", identifier: "vip_*" })).status).toBe(
      404,
    );
  });

  it("creates, reads, lists, updates and deletes identities, permissions and roles", async () => {
    const created = await post("identities.createIdentity", {
      externalId: "user_42",
      meta: { plan: "pro" },
      ratelimits: [{ name: "requests", limit: 10, duration: 1000 }],
    });
    expect(created.status).toBe(200);
    const { identityId } = created.body.data;
    expect((await post("identities.createIdentity", { externalId: "user_42" })).status).toBe(409);
    const read = await post("identities.getIdentity", { identity: "user_42" });
    expect(read.body.data).toEqual({
      id: identityId,
      externalId: "user_42",
      meta: { plan: "pro" },
      ratelimits: [
        { id: expect.stringMatching(/^rl_/), name: "requests", limit: 10, duration: 1000, autoApply: false },
      ],
    });
    const updated = await post("identities.updateIdentity", { identity: identityId, ratelimits: [] });
    expect(updated.body.data).toEqual({ id: identityId, externalId: "user_42", meta: { plan: "pro" } });
    const listed = await post("identities.listIdentities", { limit: 1 });
    expect(listed.body).toMatchObject({ data: [updated.body.data], pagination: { hasMore: false } });
    const deleted = await post("identities.deleteIdentity", { identity: "user_42" });
    expect(deleted.status).toBe(200);
    expect(deleted.body.data).toEqual({});
    expect((await post("identities.getIdentity", { identity: "user_42" })).status).toBe(404);

    const perm = await post("permissions.createPermission", { name: "Read", slug: "documents.read" });
    expect(perm.status).toBe(200);
    const role = await post("permissions.createRole", { name: "reader", permissions: ["documents.read"] });
    expect(role.status).toBe(200);
    expect((await post("permissions.getRole", { role: "reader" })).body.data).toEqual({
      id: role.body.data.roleId,
      name: "reader",
      permissions: [{ id: perm.body.data.permissionId, name: "Read", slug: "documents.read" }],
    });
    const set = await post("permissions.setRolePermissions", {
      roleId: role.body.data.roleId,
      permissions: ["documents.write"],
    });
    expect(set.body.data).toEqual([
      { id: expect.stringMatching(/^perm_/), name: "documents.write", slug: "documents.write" },
    ]);
    const perms = await post("permissions.listPermissions", {});
    expect(perms.body.data.map((p: { slug: string }) => p.slug).sort()).toEqual([
      "documents.read",
      "documents.write",
    ]);
    expect((await post("permissions.listRoles", {})).body.pagination).toEqual({ hasMore: false });
    expect((await post("permissions.deleteRole", { role: "reader" })).body.data).toEqual({});
    expect((await post("permissions.deletePermission", { permission: "documents.read" })).body.data).toEqual(
      {},
    );
    expect((await post("permissions.getPermission", { permission: "documents.read" })).status).toBe(404);
  });

  it("answers analytics in both forms from the real analytics service", async () => {
    const range = {
      start: Date.UTC(2026, 0, 1),
      end: Date.UTC(2026, 0, 2),
      granularity: "hour",
      groupBy: "outcome",
    };
    const structured = await post("analytics.getVerifications", range);
    expect(structured.status).toBe(200);
    expect(structured.body.data).toEqual([]);
    const raw = await post("analytics.getVerifications", {
      query: "SELECT count() FROM key_verifications_v1",
    });
    expect(raw.status).toBe(412);
    const mixed = await post("analytics.getVerifications", { ...range, query: "SELECT 1" });
    expect(mixed.status).toBe(400);
    expect(mixed.body.error.errors[0].location).toBe("/body/query");
  });

  it("answers 413 over a real socket for a body above 1 MiB", async () => {
    const res = await fetch(`http://127.0.0.1:${server.port}/v2/apis.createApi`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${root}` },
      body: JSON.stringify({ name: "x".repeat(1024 * 1024) }),
    });
    expect(res.status).toBe(413);
  });
});
