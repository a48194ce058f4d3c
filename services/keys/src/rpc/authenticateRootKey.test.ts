import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

const invalid = {
  reason: ErrorReason.UNAUTHENTICATED,
  message: "The provided root key is invalid. We could not find the requested key.",
};

describe("authenticateRootKey", () => {
  it("answers the caller of a known root key", async () => {
    const { client, seed } = memoryKeys();
    const rootKey = seed.rootKey("ws_1", ["api.*.verify_key"]);
    const { caller } = await client.authenticateRootKey({ hash: rootKey.hash });
    expect(caller).toMatchObject({
      workspaceId: "ws_1",
      rootKeyId: rootKey.id,
      permissions: ["api.*.verify_key"],
    });
  });

  it("answers UNAUTHENTICATED for a revoked root key", async () => {
    const { client, seed } = memoryKeys();
    const rootKey = seed.rootKey("ws_1", ["*"], 1);
    expect(await rejection(client.authenticateRootKey({ hash: rootKey.hash }))).toEqual(invalid);
  });

  it("answers UNAUTHENTICATED for an unknown hash and for an empty one", async () => {
    const { client } = memoryKeys();
    expect(await rejection(client.authenticateRootKey({ hash: "bm9wZQ==" }))).toEqual(invalid);
    expect(await rejection(client.authenticateRootKey({ hash: "" }))).toEqual(invalid);
  });
});
