import { RefillInterval, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection, TEST_ENCRYPTION_KEY } from "../../testing/in-memory-keys.ts";

const verifier = callerOf("ws_1", "api.*.verify_key");
const admin = callerOf("ws_1", "*");

describe("rerollKey", () => {
  it("issues a new key with the original's configuration and current balance", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const original = await client.createKey({
      caller: admin,
      apiId,
      prefix: "sk_live",
      byteLength: 24,
      name: "customer",
      externalId: "user_1",
      metaJson: '{"plan":"pro"}',
      permissions: ["docs.read"],
      expires: 4_000_000_000_000n,
      credits: { remaining: 10n, refill: { interval: RefillInterval.MONTHLY, amount: 10n, refillDay: 3 } },
      ratelimits: [{ name: "rps", limit: 5n, duration: 1000n, autoApply: true }],
    });
    await client.verifyKey({ caller: verifier, key: original.key, cost: 4n });
    const res = await client.rerollKey({
      // The new key is given the original's permissions (rbac-changes.test.ts).
      caller: callerOf("ws_1", "api.*.create_key", "rbac.*.add_permission_to_key"),
      keyId: original.keyId,
      expiration: 60_000n,
    });
    expect(res.keyId).not.toBe(original.keyId);
    expect(res.key.startsWith("sk_live_")).toBe(true);
    const before = (await client.getKey({ caller: admin, keyId: original.keyId })).key!;
    const after = (await client.getKey({ caller: admin, keyId: res.keyId })).key!;
    expect(after).toMatchObject({
      name: "customer",
      metaJson: '{"plan":"pro"}',
      permissions: ["docs.read"],
      roles: [],
      expires: 4_000_000_000_000n,
      enabled: true,
      credits: { remaining: 6n, refill: { interval: RefillInterval.MONTHLY, amount: 10n, refillDay: 3 } },
    });
    expect(after.ratelimits).toHaveLength(1);
    expect(after.ratelimits[0]).toMatchObject({ name: "rps", limit: 5n, duration: 1000n, autoApply: true });
    expect(after.ratelimits[0]?.id).not.toBe(before.ratelimits[0]?.id);
    expect(await client.verifyKey({ caller: verifier, key: res.key })).toMatchObject({
      code: VerifyCode.VALID,
      credits: 5n,
    });
  });

  it("keeps the original working for expiration ms, then EXPIRED", async () => {
    const { client, seed, clock } = memoryKeys();
    const original = await seed.key({ apiId: await seed.api() });
    expect((await client.verifyKey({ caller: verifier, key: original.key })).code).toBe(VerifyCode.VALID);
    await client.rerollKey({ caller: admin, keyId: original.keyId, expiration: 60_000n });
    clock.advance(60_000);
    expect((await client.verifyKey({ caller: verifier, key: original.key })).code).toBe(VerifyCode.VALID);
    clock.advance(1);
    expect((await client.verifyKey({ caller: verifier, key: original.key })).code).toBe(VerifyCode.EXPIRED);
  });

  it("stops the original at once with expiration 0", async () => {
    const { client, seed } = memoryKeys();
    const original = await seed.key({ apiId: await seed.api() });
    expect((await client.verifyKey({ caller: verifier, key: original.key })).code).toBe(VerifyCode.VALID);
    const res = await client.rerollKey({ caller: admin, keyId: original.keyId, expiration: 0n });
    expect((await client.verifyKey({ caller: verifier, key: original.key })).code).toBe(VerifyCode.EXPIRED);
    expect((await client.verifyKey({ caller: verifier, key: res.key })).code).toBe(VerifyCode.VALID);
  });

  it("keeps a recoverable key recoverable, and then needs encrypt_key too", async () => {
    const { client, seed } = memoryKeys({ encryptionKey: TEST_ENCRYPTION_KEY });
    const apiId = await seed.api();
    const original = await seed.key({ apiId, recoverable: true });
    const refused = await rejection(
      client.rerollKey({
        caller: callerOf("ws_1", "api.*.create_key"),
        keyId: original.keyId,
        expiration: 0n,
      }),
    );
    expect(refused).toEqual({
      reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
      message: `The root key lacks the permission 'api.${apiId}.encrypt_key'.`,
    });
    const res = await client.rerollKey({
      caller: callerOf("ws_1", "api.*.create_key", "api.*.encrypt_key"),
      keyId: original.keyId,
      expiration: 0n,
    });
    const got = await client.getKey({ caller: admin, keyId: res.keyId, decrypt: true });
    expect(got.key?.plaintext).toBe(res.key);
  });

  it("answers INSUFFICIENT_PERMISSIONS without create_key and KEY_NOT_FOUND across workspaces", async () => {
    const { client, seed } = memoryKeys();
    const mine = await seed.key({ apiId: await seed.api() });
    expect(
      (await rejection(client.rerollKey({ caller: callerOf("ws_1", "api.*.update_key"), keyId: mine.keyId })))
        .reason,
    ).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
    const theirs = await seed.key({ apiId: await seed.api("ws_2"), workspaceId: "ws_2" });
    expect((await rejection(client.rerollKey({ caller: admin, keyId: theirs.keyId }))).reason).toBe(
      ErrorReason.KEY_NOT_FOUND,
    );
  });

  it("answers INVALID_INPUT naming expiration beyond its range", async () => {
    const { client, seed } = memoryKeys();
    const { keyId } = await seed.key({ apiId: await seed.api() });
    expect(await rejection(client.rerollKey({ caller: admin, keyId, expiration: -1n }))).toEqual({
      reason: ErrorReason.INVALID_INPUT,
      message: "expiration must be between 0 and 4102444800000, got -1",
    });
  });

  it("carries the identity and the roles that still exist over to the new key", async () => {
    const m = memoryKeys();
    await m.rbac.role("reader", ["docs.read"]);
    await m.rbac.role("writer", ["docs.write"]);
    const original = await m.seed.key({
      apiId: await m.seed.api(),
      externalId: "user_1",
      roles: ["reader", "writer"],
    });
    await m.identity.deleteRole({ caller: admin, role: "writer" });
    const res = await m.client.rerollKey({ caller: admin, keyId: original.keyId, expiration: 0n });
    const before = await m.deps.store.findKeyById(original.keyId);
    expect(await m.deps.store.findKeyById(res.keyId)).toMatchObject({
      externalId: "user_1",
      identityId: before?.identityId,
      roles: ["reader"],
    });
    expect(
      await m.client.verifyKey({ caller: verifier, key: res.key, permissions: "docs.read" }),
    ).toMatchObject({
      code: VerifyCode.VALID,
      roles: ["reader"],
    });
  });
});
