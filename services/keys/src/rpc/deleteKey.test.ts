import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

const deleter = callerOf("ws_1", "api.*.delete_key");
const verifier = callerOf("ws_1", "api.*.verify_key");

describe("deleteKey", () => {
  it("stops a key verifying at once and keeps its record", async () => {
    const { client, seed, deps } = memoryKeys();
    const { keyId, key } = await seed.key({ apiId: await seed.api() });
    expect((await client.verifyKey({ caller: verifier, key })).code).toBe(VerifyCode.VALID);
    expect(await client.deleteKey({ caller: deleter, keyId })).toMatchObject({});
    expect((await client.verifyKey({ caller: verifier, key })).code).toBe(VerifyCode.NOT_FOUND);
    expect((await deps.store.findKeyById(keyId))?.deletedAt).toBe(deps.clock.now());
    expect((await rejection(client.getKey({ caller: callerOf("ws_1", "*"), keyId }))).reason).toBe(
      ErrorReason.KEY_NOT_FOUND,
    );
  });

  it("removes the record and its hash when permanent, so the key string can be imported again", async () => {
    const { client, seed, deps } = memoryKeys();
    const apiId = await seed.api();
    const { keyId, key, hash } = await seed.key({ apiId });
    await client.verifyKey({ caller: verifier, key });
    await client.deleteKey({ caller: deleter, keyId, permanent: true });
    expect(await deps.store.findKeyById(keyId)).toBeUndefined();
    expect((await client.verifyKey({ caller: verifier, key })).code).toBe(VerifyCode.NOT_FOUND);
    const imported = await client.migrateKeys({
      caller: callerOf("ws_1", "*"),
      migrationId: "m1",
      apiId,
      keys: [{ hash }],
    });
    expect(imported.failed).toEqual([]);
    expect((await client.verifyKey({ caller: verifier, key })).code).toBe(VerifyCode.VALID);
  });

  it("answers KEY_NOT_FOUND for an already deleted key and for a key of another workspace", async () => {
    const { client, seed } = memoryKeys();
    const mine = await seed.key({ apiId: await seed.api() });
    await client.deleteKey({ caller: deleter, keyId: mine.keyId });
    expect(await rejection(client.deleteKey({ caller: deleter, keyId: mine.keyId }))).toEqual({
      reason: ErrorReason.KEY_NOT_FOUND,
      message: "The specified key was not found.",
    });
    const theirs = await seed.key({ apiId: await seed.api("ws_2"), workspaceId: "ws_2" });
    expect((await rejection(client.deleteKey({ caller: deleter, keyId: theirs.keyId }))).reason).toBe(
      ErrorReason.KEY_NOT_FOUND,
    );
  });

  it("answers INSUFFICIENT_PERMISSIONS without delete_key for the key's API", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const { keyId, key } = await seed.key({ apiId });
    expect(
      await rejection(client.deleteKey({ caller: callerOf("ws_1", "api.api_other.delete_key"), keyId })),
    ).toEqual({
      reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
      message: `The root key lacks the permission 'api.${apiId}.delete_key'.`,
    });
    expect((await client.verifyKey({ caller: verifier, key })).code).toBe(VerifyCode.VALID);
  });
});
