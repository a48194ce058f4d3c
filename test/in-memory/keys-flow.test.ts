import { createHash } from "node:crypto";
import { listen } from "@latchkey/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inMemoryStack } from "../testing/in-memory-stack.ts";

// The keys routes must agree with what KeysService accepts and answers, null paths included.
describe("the keys operations through the gateway over the real keys service", () => {
  const { gateway, rootKey: root } = inMemoryStack("keys_flow", { encryptionKey: Buffer.alloc(32, 7) });
  let server: Awaited<ReturnType<typeof listen>>;
  const post = async (operation: string, body: unknown): Promise<{ status: number; body: any }> => {
    const res = await fetch(`http://127.0.0.1:${server.port}/v2/${operation}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${root}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  const data = async (operation: string, body: unknown) => {
    const res = await post(operation, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  };
  const verify = async (key: string) => (await data("keys.verifyKey", { key })).code;
  let apiId: string;

  beforeAll(async () => {
    server = await listen(gateway, 0, "127.0.0.1");
    apiId = (await data("apis.createApi", { name: "payments" })).apiId;
  });
  afterAll(() => server.close());

  it("updates a key in three states: omitted kept, value replaced, null cleared", async () => {
    const { keyId } = await data("keys.createKey", {
      apiId,
      name: "Acme",
      externalId: "user_42",
      meta: { plan: "pro" },
      expires: Date.UTC(2030, 0, 1),
      credits: { remaining: 10, refill: { interval: "monthly", amount: 10, refillDay: 5 } },
      ratelimits: [{ name: "requests", limit: 10, duration: 60_000 }],
    });
    const before = await data("keys.getKey", { keyId });
    expect(before).toMatchObject({
      name: "Acme",
      meta: { plan: "pro" },
      identity: { externalId: "user_42" },
    });

    expect(await data("keys.updateKey", { keyId, name: "Acme Ltd", credits: { refill: null } })).toEqual({});
    const renamed = await data("keys.getKey", { keyId });
    expect(renamed).toMatchObject({ name: "Acme Ltd", meta: { plan: "pro" }, credits: { remaining: 10 } });
    expect(renamed.credits.refill).toBeUndefined();
    expect(renamed.ratelimits.map((r: { id: string }) => r.id)).toEqual(
      before.ratelimits.map((r: { id: string }) => r.id),
    );

    await data("keys.updateKey", {
      keyId,
      name: null,
      meta: null,
      expires: null,
      externalId: null,
      credits: null,
    });
    const cleared = await data("keys.getKey", { keyId });
    for (const field of ["name", "meta", "expires", "identity", "credits"]) {
      expect(cleared[field], field).toBeUndefined();
    }

    await data("keys.updateKey", { keyId, credits: { remaining: 3 }, ratelimits: [], enabled: false });
    expect(await data("keys.getKey", { keyId })).toMatchObject({ credits: { remaining: 3 }, enabled: false });
    expect((await data("keys.getKey", { keyId })).ratelimits).toBeUndefined();
  });

  it("refuses a refill on a key made unlimited in the same update, naming credits.refill", async () => {
    const { keyId } = await data("keys.createKey", { apiId, credits: { remaining: 5 } });
    const res = await post("keys.updateKey", {
      keyId,
      credits: { remaining: null, refill: { interval: "daily", amount: 5 } },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location: "/body/credits/refill" })]);
  });

  it("sets, increments, decrements and unlimits credits, answering the balance", async () => {
    const { keyId, key } = await data("keys.createKey", { apiId, credits: { remaining: 1 } });
    expect(await data("keys.updateCredits", { keyId, operation: "set", value: 5 })).toEqual({ remaining: 5 });
    expect(await data("keys.updateCredits", { keyId, operation: "increment", value: 2 })).toEqual({
      remaining: 7,
    });
    expect(await data("keys.updateCredits", { keyId, operation: "decrement", value: 10 })).toEqual({
      remaining: 0,
    });
    expect(await verify(key)).toBe("USAGE_EXCEEDED");
    expect(await data("keys.updateCredits", { keyId, operation: "set", value: null })).toEqual({
      remaining: null,
    });
    expect(await verify(key)).toBe("VALID");
    const refused = await post("keys.updateCredits", { keyId, operation: "increment", value: 1 });
    expect(refused.status).toBe(400);
    expect(refused.body.error.errors).toEqual([expect.objectContaining({ location: "/body/operation" })]);
  });

  it("adds, removes and sets a key's permissions and roles, answering the lists", async () => {
    const { keyId } = await data("keys.createKey", { apiId });
    const added = await data("keys.addPermissions", {
      keyId,
      permissions: ["documents.write", "documents.read"],
    });
    expect(added).toEqual([
      { id: expect.stringMatching(/^perm_/), name: "documents.read", slug: "documents.read" },
      { id: expect.stringMatching(/^perm_/), name: "documents.write", slug: "documents.write" },
    ]);
    expect(
      (await data("keys.removePermissions", { keyId, permissions: ["documents.write"] })).map(
        (p: { slug: string }) => p.slug,
      ),
    ).toEqual(["documents.read"]);
    expect(await data("keys.setPermissions", { keyId, permissions: [] })).toEqual([]);

    await data("permissions.createRole", {
      name: "reader",
      description: "Reads",
      permissions: ["documents.read"],
    });
    await data("permissions.createRole", { name: "writer" });
    const roles = await data("keys.addRoles", { keyId, roles: ["writer", "reader"] });
    expect(roles).toEqual([
      {
        id: expect.stringMatching(/^role_/),
        name: "reader",
        description: "Reads",
        permissions: [
          { id: expect.stringMatching(/^perm_/), name: "documents.read", slug: "documents.read" },
        ],
      },
      { id: expect.stringMatching(/^role_/), name: "writer", permissions: [] },
    ]);
    expect(
      (await data("keys.removeRoles", { keyId, roles: ["reader"] })).map((r: { name: string }) => r.name),
    ).toEqual(["writer"]);
    const missing = await post("keys.setRoles", { keyId, roles: ["auditor"] });
    expect(missing.status).toBe(404);
    expect(missing.body.error.type).toBe("https://unkey.com/docs/errors/unkey/data/role_not_found");
    expect(await data("keys.setRoles", { keyId, roles: [] })).toEqual([]);
  });

  it("answers whoami as getKey, lists keys by page and decrypts a recoverable key", async () => {
    const own = (await data("apis.createApi", { name: "listing" })).apiId;
    const a = await data("keys.createKey", { apiId: own, recoverable: true, name: "a" });
    const b = await data("keys.createKey", { apiId: own, name: "b" });
    expect(await data("keys.whoami", { key: a.key })).toEqual(await data("keys.getKey", { keyId: a.keyId }));
    expect((await data("keys.getKey", { keyId: a.keyId, decrypt: true })).plaintext).toBe(a.key);

    const first = await post("apis.listKeys", { apiId: own, limit: 1, decrypt: true });
    expect(first.body.data).toHaveLength(1);
    expect(first.body.pagination).toEqual({ cursor: expect.any(String), hasMore: true });
    const second = await post("apis.listKeys", {
      apiId: own,
      limit: 1,
      cursor: first.body.pagination.cursor,
    });
    expect(second.body.pagination).toEqual({ hasMore: false });
    const listed = [...first.body.data, ...second.body.data];
    expect(listed.map((k: { keyId: string }) => k.keyId).sort()).toEqual([a.keyId, b.keyId].sort());
    expect(first.body.data[0].plaintext).toBe(first.body.data[0].keyId === a.keyId ? a.key : undefined);
  });

  it("rerolls, deletes and migrates keys, and deleting the API ends its keys", async () => {
    const own = (await data("apis.createApi", { name: "lifecycle" })).apiId;
    const old = await data("keys.createKey", { apiId: own, prefix: "sk", credits: { remaining: 4 } });
    const fresh = await data("keys.rerollKey", { keyId: old.keyId, expiration: 0 });
    expect(fresh.key).toMatch(/^sk_/);
    expect(fresh.keyId).not.toBe(old.keyId);
    expect(await verify(old.key)).toBe("EXPIRED");
    expect(await verify(fresh.key)).toBe("VALID");

    expect(await data("keys.deleteKey", { keyId: fresh.keyId })).toEqual({});
    expect(await verify(fresh.key)).toBe("NOT_FOUND");

    const legacy = "legacy_4f9K2mQ";
    const hex = createHash("sha256").update(legacy).digest("hex");
    const migrated = await data("keys.migrateKeys", {
      migrationId: "acme",
      apiId: own,
      keys: [{ hash: hex, name: "imported", credits: { remaining: null } }, { hash: hex }],
    });
    expect(migrated).toEqual({
      migrated: [{ hash: hex, keyId: expect.stringMatching(/^key_/) }],
      failed: [hex],
    });
    expect(await verify(legacy)).toBe("VALID");

    expect(await data("apis.deleteApi", { apiId: own })).toEqual({});
    expect(await verify(legacy)).toBe("NOT_FOUND");
    expect((await post("apis.listKeys", { apiId: own })).status).toBe(404);
  });
});
