import { RefillInterval } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason, hashKey } from "@latchkey/runtime";
import bs58 from "bs58";
import { describe, expect, it } from "vitest";
import {
  callerOf,
  invalidAt,
  memoryKeys,
  rejection,
  TEST_ENCRYPTION_KEY,
} from "../../testing/in-memory-keys.ts";

describe("createKey", () => {
  it("issues prefix_base58 of byteLength random bytes, stored only as its SHA-256", async () => {
    const { client, seed, deps } = memoryKeys();
    const apiId = await seed.api();
    const { keyId, key } = await client.createKey({
      caller: callerOf("ws_1", "api.*.create_key"),
      apiId,
      prefix: "sk_live",
      byteLength: 32,
    });
    expect(keyId).toMatch(/^key_/);
    expect(key.startsWith("sk_live_")).toBe(true);
    expect(bs58.decode(key.slice("sk_live_".length))).toHaveLength(32);
    const stored = await deps.store.findKeyById(keyId);
    expect(stored?.hash).toBe(hashKey(key));
    expect(stored?.start).toBe(key.slice(0, "sk_live_".length + 4));
    expect(JSON.stringify(stored)).not.toContain(key);
  });

  it("issues a bare base58 key of 16 bytes when no prefix or length is given", async () => {
    const { client, seed, deps } = memoryKeys();
    const apiId = await seed.api();
    const { keyId, key } = await client.createKey({ caller: callerOf("ws_1", "*"), apiId });
    expect(bs58.decode(key)).toHaveLength(16);
    expect((await deps.store.findKeyById(keyId))?.start).toBe(key.slice(0, 4));
  });

  it("keeps every field of the request", async () => {
    const { client, seed, deps } = memoryKeys();
    const apiId = await seed.api();
    const { keyId } = await client.createKey({
      caller: callerOf("ws_1", "*"),
      apiId,
      name: "customer 7",
      externalId: "user_7",
      metaJson: '{"plan":"pro"}',
      permissions: ["documents.read", "documents.read", "documents.write"],
      expires: 4_102_444_800_000n,
      enabled: false,
      credits: { remaining: 100n, refill: { interval: RefillInterval.DAILY, amount: 100n } },
      ratelimits: [{ name: "requests", limit: 10n, duration: 1000n, autoApply: true }],
    });
    const stored = await deps.store.findKeyById(keyId);
    expect(stored).toMatchObject({
      workspaceId: "ws_1",
      apiId,
      name: "customer 7",
      externalId: "user_7",
      metaJson: '{"plan":"pro"}',
      permissions: ["documents.read", "documents.write"],
      roles: [],
      expires: 4_102_444_800_000,
      enabled: false,
      remaining: 100,
      refill: { interval: "daily", amount: 100, day: null },
    });
    expect(stored?.ratelimits).toEqual([
      { id: expect.stringMatching(/^rl_/), name: "requests", limit: 10, duration: 1000, autoApply: true },
    ]);
  });

  it("defaults a monthly refill to the 1st of the month", async () => {
    const { client, seed, deps } = memoryKeys();
    const apiId = await seed.api();
    const { keyId } = await client.createKey({
      caller: callerOf("ws_1", "*"),
      apiId,
      credits: { remaining: 5n, refill: { interval: RefillInterval.MONTHLY, amount: 50n } },
    });
    expect((await deps.store.findKeyById(keyId))?.refill).toEqual({
      interval: "monthly",
      amount: 50,
      day: 1,
    });
  });

  it("answers INVALID_INPUT for a daily refill with a refillDay", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const failure = await rejection(
      client.createKey({
        caller: callerOf("ws_1", "*"),
        apiId,
        credits: { remaining: 5n, refill: { interval: RefillInterval.DAILY, amount: 50n, refillDay: 3 } },
      }),
    );
    expect(failure).toEqual({
      reason: ErrorReason.INVALID_INPUT,
      message: "refillDay applies only to monthly refills",
    });
  });

  it("answers INVALID_INPUT for a refill without a remaining balance", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const failure = await rejection(
      client.createKey({
        caller: callerOf("ws_1", "*"),
        apiId,
        credits: { refill: { interval: RefillInterval.MONTHLY, amount: 50n } },
      }),
    );
    expect(failure).toEqual({
      reason: ErrorReason.INVALID_INPUT,
      message: "remaining must be set when refill is set",
    });
  });

  it("answers INVALID_INPUT for meta that is not a JSON object", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const failure = await rejection(
      client.createKey({ caller: callerOf("ws_1", "*"), apiId, metaJson: "[1]" }),
    );
    expect(failure.reason).toBe(ErrorReason.INVALID_INPUT);
  });

  it("answers INVALID_INPUT for two rate limits of the same name", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const limit = { name: "requests", limit: 10n, duration: 1000n, autoApply: false };
    const failure = await rejection(
      client.createKey({ caller: callerOf("ws_1", "*"), apiId, ratelimits: [limit, limit] }),
    );
    expect(failure).toEqual({
      reason: ErrorReason.INVALID_INPUT,
      message: "rate limit name 'requests' is used twice",
    });
  });

  it("answers ROLE_NOT_FOUND for a role that does not exist, and creates neither role nor key", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const failure = await rejection(
      client.createKey({ caller: callerOf("ws_1", "*"), apiId, roles: ["admin"] }),
    );
    expect(failure).toEqual({ reason: ErrorReason.ROLE_NOT_FOUND, message: "Role 'admin' was not found." });
    expect((await client.listKeys({ caller: callerOf("ws_1", "*"), apiId })).keys).toEqual([]);
  });

  it("masks a missing create_key permission as API_NOT_FOUND", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const failure = await rejection(
      client.createKey({ caller: callerOf("ws_1", "api.api_other.create_key", "api.*.read_key"), apiId }),
    );
    expect(failure).toEqual({
      reason: ErrorReason.API_NOT_FOUND,
      message: "The specified API was not found.",
    });
  });

  it("answers API_NOT_FOUND for an API of another workspace, exactly as for a missing one", async () => {
    const { client, seed } = memoryKeys();
    const theirs = await seed.api("ws_2");
    const caller = callerOf("ws_1", "*");
    const other = await rejection(client.createKey({ caller, apiId: theirs }));
    expect(other).toEqual(await rejection(client.createKey({ caller, apiId: "api_missing000000" })));
    expect(other.reason).toBe(ErrorReason.API_NOT_FOUND);
  });

  it("masks a recoverable key without encrypt_key as API_NOT_FOUND", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const failure = await rejection(
      client.createKey({ caller: callerOf("ws_1", "api.*.create_key"), apiId, recoverable: true }),
    );
    expect(failure.reason).toBe(ErrorReason.API_NOT_FOUND);
  });

  it("answers PRECONDITION_FAILED for a recoverable key when no encryption key is configured", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const caller = callerOf("ws_1", "api.*.create_key", "api.*.encrypt_key");
    expect(await rejection(client.createKey({ caller, apiId, recoverable: true }))).toEqual({
      reason: ErrorReason.PRECONDITION_FAILED,
      message:
        "This API does not support key encryption: no encryption key is configured (LATCHKEY_ENCRYPTION_KEY).",
    });
  });

  it("stores a recoverable key's plaintext sealed with AES-256-GCM, apart from its hash", async () => {
    const { client, seed, deps } = memoryKeys({ encryptionKey: TEST_ENCRYPTION_KEY });
    const apiId = await seed.api();
    const caller = callerOf("ws_1", "api.*.create_key", "api.*.encrypt_key");
    const { keyId, key } = await client.createKey({ caller, apiId, recoverable: true });
    const stored = await deps.store.findKeyById(keyId);
    expect(stored?.recoverable).toBe(true);
    const sealed = await deps.store.findEncryptedKey(keyId);
    expect(sealed?.kekId).toBe(deps.vault?.kekId);
    expect(JSON.stringify(sealed)).not.toContain(key);
    expect(deps.vault?.open(sealed!)).toBe(key);
  });

  it("links the key to the identity of its externalId, creating it once and sharing it after", async () => {
    const m = memoryKeys();
    const apiId = await m.seed.api();
    const first = await m.seed.key({ apiId, externalId: "user_1" });
    const second = await m.seed.key({ apiId, externalId: "user_1" });
    const identity = (await m.identity.getIdentity({ caller: m.admin, identity: "user_1" })).identity!;
    expect(identity.id).toMatch(/^id_/);
    for (const { keyId } of [first, second]) {
      expect(await m.deps.store.findKeyById(keyId)).toMatchObject({
        externalId: "user_1",
        identityId: identity.id,
      });
    }
    expect((await m.client.getKey({ caller: m.admin, keyId: first.keyId })).key?.identity).toMatchObject({
      id: identity.id,
      externalId: "user_1",
    });
  });

  it("links to an identity that exists already, with its meta and rate limits", async () => {
    const m = memoryKeys();
    const { identityId } = await m.identity.createIdentity({
      caller: m.admin,
      externalId: "org_9",
      metaJson: '{"tier":"gold"}',
      ratelimits: [{ name: "org", limit: 10n, duration: 1000n, autoApply: true }],
    });
    const { keyId } = await m.seed.key({ apiId: await m.seed.api(), externalId: "org_9" });
    const identity = (await m.client.getKey({ caller: m.admin, keyId })).key?.identity;
    expect(identity).toMatchObject({ id: identityId, externalId: "org_9", metaJson: '{"tier":"gold"}' });
    expect(identity?.ratelimits.map((r) => [r.name, r.limit, r.duration, r.autoApply])).toEqual([
      ["org", 10n, 1000n, true],
    ]);
  });

  it("keeps existing roles by name, and creates the permission slugs it names without rbac.*.create_permission", async () => {
    const m = memoryKeys();
    const apiId = await m.seed.api();
    await m.rbac.role("reader", ["docs.read"]);
    const res = await m.client.createKey({
      // Giving a key roles and permissions needs what adding them needs (rbac-changes.test.ts).
      caller: callerOf("ws_1", "api.*.create_key", "rbac.*.add_role_to_key", "rbac.*.add_permission_to_key"),
      apiId,
      roles: ["reader"],
      permissions: ["billing.read"],
    });
    expect(await m.deps.store.findKeyById(res.keyId)).toMatchObject({
      roles: ["reader"],
      permissions: ["billing.read"],
    });
    expect(
      (await m.identity.getPermission({ caller: m.admin, permission: "billing.read" })).permission,
    ).toMatchObject({
      name: "billing.read",
      slug: "billing.read",
    });
  });

  it("answers INVALID_INPUT naming externalId with characters an identity cannot have", async () => {
    const m = memoryKeys();
    const apiId = await m.seed.api();
    expect(
      (await invalidAt(m.client.createKey({ caller: m.admin, apiId, externalId: "user 1" }))).location,
    ).toBe("/externalId");
  });
});
