import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

describe("whoami", () => {
  it("answers the key behind a plaintext, as getKey shows it", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const { keyId, key } = await seed.key({ apiId, name: "mine", credits: 4 });
    const res = await client.whoami({ caller: callerOf("ws_1", `api.${apiId}.read_key`), key });
    const got = await client.getKey({ caller: callerOf("ws_1", "*"), keyId });
    expect(res.key).toEqual(got.key);
    expect(res.key).toMatchObject({ keyId, name: "mine", credits: { remaining: 4n } });
    expect(res.key?.plaintext).toBeUndefined();
  });

  it("masks a missing read_key as KEY_NOT_FOUND, exactly as an unknown key", async () => {
    const { client, seed } = memoryKeys();
    const { key } = await seed.key({ apiId: await seed.api() });
    const caller = callerOf("ws_1", "api.api_other.read_key");
    const masked = await rejection(client.whoami({ caller, key }));
    expect(masked).toEqual({
      reason: ErrorReason.KEY_NOT_FOUND,
      message: "The specified key was not found.",
    });
    expect(await rejection(client.whoami({ caller: callerOf("ws_1", "*"), key: "sk_unknown" }))).toEqual(
      masked,
    );
  });

  it("answers KEY_NOT_FOUND for a key of another workspace and for a deleted key", async () => {
    const { client, seed } = memoryKeys();
    const theirs = await seed.key({ apiId: await seed.api("ws_2"), workspaceId: "ws_2" });
    expect((await rejection(client.whoami({ caller: callerOf("ws_1", "*"), key: theirs.key }))).reason).toBe(
      ErrorReason.KEY_NOT_FOUND,
    );
    const mine = await seed.key({ apiId: await seed.api() });
    await client.deleteKey({ caller: callerOf("ws_1", "*"), keyId: mine.keyId });
    expect((await rejection(client.whoami({ caller: callerOf("ws_1", "*"), key: mine.key }))).reason).toBe(
      ErrorReason.KEY_NOT_FOUND,
    );
  });

  it("answers INVALID_INPUT without a key", async () => {
    const { client } = memoryKeys();
    expect(await rejection(client.whoami({ caller: callerOf("ws_1", "*"), key: "" }))).toEqual({
      reason: ErrorReason.INVALID_INPUT,
      message: "key is required",
    });
  });

  it("answers the key's identity", async () => {
    const m = memoryKeys();
    const { key } = await m.seed.key({ apiId: await m.seed.api(), externalId: "user_1" });
    const identity = (await m.identity.getIdentity({ caller: m.admin, identity: "user_1" })).identity!;
    expect((await m.client.whoami({ caller: m.admin, key })).key?.identity).toMatchObject({
      id: identity.id,
      externalId: "user_1",
    });
  });
});
