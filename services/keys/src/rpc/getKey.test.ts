import { RefillInterval } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection, TEST_ENCRYPTION_KEY } from "../../testing/in-memory-keys.ts";

describe("getKey", () => {
  it("answers the key's record, never its plaintext", async () => {
    const { client, seed, clock } = memoryKeys();
    const apiId = await seed.api();
    const { keyId, key } = await client.createKey({
      caller: callerOf("ws_1", "*"),
      apiId,
      prefix: "sk",
      name: "k",
      metaJson: '{"a":1}',
      permissions: ["p1"],
      expires: 4_000_000_000_000n,
      credits: { remaining: 7n, refill: { interval: RefillInterval.MONTHLY, amount: 9n, refillDay: 15 } },
      ratelimits: [{ name: "rps", limit: 5n, duration: 1000n, autoApply: false }],
    });
    const res = await client.getKey({ caller: callerOf("ws_1", `api.${apiId}.read_key`), keyId });
    expect(res.key).toMatchObject({
      keyId,
      apiId,
      start: key.slice(0, 7),
      enabled: true,
      name: "k",
      metaJson: '{"a":1}',
      createdAt: BigInt(clock.now()),
      expires: 4_000_000_000_000n,
      permissions: ["p1"],
      roles: [],
      credits: { remaining: 7n, refill: { interval: RefillInterval.MONTHLY, amount: 9n, refillDay: 15 } },
      ratelimits: [{ name: "rps", limit: 5n, duration: 1000n, autoApply: false }],
    });
    expect(res.key?.plaintext).toBeUndefined();
  });

  it("leaves credits unset for an unlimited key", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const { keyId } = await seed.key({ apiId });
    const res = await client.getKey({ caller: callerOf("ws_1", "*"), keyId });
    expect(res.key?.credits).toBeUndefined();
  });

  it("answers INSUFFICIENT_PERMISSIONS to a root key of the workspace without read_key for the key's API", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const { keyId } = await seed.key({ apiId });
    expect(
      await rejection(client.getKey({ caller: callerOf("ws_1", "api.api_other.read_key"), keyId })),
    ).toEqual({
      reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
      message: `The root key lacks the permission 'api.${apiId}.read_key'.`,
    });
  });

  it("asks for decrypt_key too when decrypt is requested", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const { keyId } = await seed.key({ apiId });
    const failure = await rejection(
      client.getKey({ caller: callerOf("ws_1", "api.*.read_key"), keyId, decrypt: true }),
    );
    expect(failure.reason).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
    expect(failure.message).toContain("decrypt_key");
  });

  it("answers KEY_NOT_FOUND for a key of another workspace, exactly as for a missing one", async () => {
    const { client, seed } = memoryKeys();
    const theirApi = await seed.api("ws_2");
    const { keyId } = await seed.key({ apiId: theirApi, workspaceId: "ws_2" });
    const caller = callerOf("ws_1", "*");
    const other = await rejection(client.getKey({ caller, keyId }));
    expect(other).toEqual({ reason: ErrorReason.KEY_NOT_FOUND, message: "The specified key was not found." });
    expect(await rejection(client.getKey({ caller, keyId: "key_missing0000000" }))).toEqual(other);
  });

  it("answers KEY_NOT_FOUND for a deleted key and for a key of a deleted API", async () => {
    const { client, seed, deps } = memoryKeys();
    const apiId = await seed.api();
    const deleted = await seed.key({ apiId });
    deps.store.patchKey(deleted.keyId, { deletedAt: 1 });
    const caller = callerOf("ws_1", "*");
    expect((await rejection(client.getKey({ caller, keyId: deleted.keyId }))).reason).toBe(
      ErrorReason.KEY_NOT_FOUND,
    );
    const orphan = await seed.key({ apiId });
    deps.store.patchApi(apiId, { deletedAt: 1 });
    expect((await rejection(client.getKey({ caller, keyId: orphan.keyId }))).reason).toBe(
      ErrorReason.KEY_NOT_FOUND,
    );
  });

  it("returns the plaintext of a recoverable key to a holder of decrypt_key", async () => {
    const { client, seed } = memoryKeys({ encryptionKey: TEST_ENCRYPTION_KEY });
    const apiId = await seed.api();
    const { keyId, key } = await seed.key({ apiId, recoverable: true });
    const caller = callerOf("ws_1", "api.*.read_key", `api.${apiId}.decrypt_key`);
    expect((await client.getKey({ caller, keyId, decrypt: true })).key?.plaintext).toBe(key);
    expect((await client.getKey({ caller, keyId })).key?.plaintext).toBeUndefined();
  });

  it("never returns a plaintext for a key created without recoverable", async () => {
    const { client, seed } = memoryKeys({ encryptionKey: TEST_ENCRYPTION_KEY });
    const apiId = await seed.api();
    const { keyId } = await seed.key({ apiId });
    const res = await client.getKey({ caller: callerOf("ws_1", "*"), keyId, decrypt: true });
    expect(res.key?.plaintext).toBeUndefined();
  });

  it("shows a refill that is due but not yet applied", async () => {
    const { client, seed, clock } = memoryKeys();
    const apiId = await seed.api();
    const { keyId } = await client.createKey({
      caller: callerOf("ws_1", "*"),
      apiId,
      credits: { remaining: 1n, refill: { interval: RefillInterval.DAILY, amount: 9n } },
    });
    clock.advance(86_400_000);
    expect((await client.getKey({ caller: callerOf("ws_1", "*"), keyId })).key?.credits?.remaining).toBe(9n);
  });

  it("answers the key's identity, and none once the identity is deleted", async () => {
    const m = memoryKeys();
    const { identityId } = await m.identity.createIdentity({
      caller: m.admin,
      externalId: "user_1",
      metaJson: '{"a":1}',
    });
    const { keyId } = await m.seed.key({ apiId: await m.seed.api(), externalId: "user_1" });
    expect((await m.client.getKey({ caller: m.admin, keyId })).key?.identity).toMatchObject({
      id: identityId,
      externalId: "user_1",
      metaJson: '{"a":1}',
      ratelimits: [],
    });
    await m.identity.deleteIdentity({ caller: m.admin, identity: identityId });
    expect((await m.client.getKey({ caller: m.admin, keyId })).key?.identity).toBeUndefined();
  });
});
