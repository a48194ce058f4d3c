import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection, TEST_ENCRYPTION_KEY } from "../../testing/in-memory-keys.ts";

describe("getApi", () => {
  it("answers the API to a root key holding read_api for that very API", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const { api } = await client.getApi({ caller: callerOf("ws_1", `api.${apiId}.read_api`), apiId });
    expect(api?.id).toBe(apiId);
    expect(api?.name).toBe("seeded");
  });

  it("answers API_NOT_FOUND for an API of another workspace, exactly as for a missing one", async () => {
    const { client, seed } = memoryKeys();
    const theirs = await seed.api("ws_2");
    const caller = callerOf("ws_1", "*");
    const other = await rejection(client.getApi({ caller, apiId: theirs }));
    const missing = await rejection(client.getApi({ caller, apiId: "api_doesnotexist00" }));
    expect(other).toEqual({ reason: ErrorReason.API_NOT_FOUND, message: "The specified API was not found." });
    expect(missing).toEqual(other);
  });

  it("answers API_NOT_FOUND for a deleted API", async () => {
    const { client, seed, deps } = memoryKeys();
    const apiId = await seed.api();
    deps.store.patchApi(apiId, { deletedAt: 1 });
    expect((await rejection(client.getApi({ caller: callerOf("ws_1", "*"), apiId }))).reason).toBe(
      ErrorReason.API_NOT_FOUND,
    );
  });

  it("answers INSUFFICIENT_PERMISSIONS to a root key allowed to read another API only", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const caller = callerOf("ws_1", "api.api_other.read_api");
    expect(await rejection(client.getApi({ caller, apiId }))).toEqual({
      reason: ErrorReason.INSUFFICIENT_PERMISSIONS,
      message: `The root key lacks the permission 'api.${apiId}.read_api'.`,
    });
  });

  it("says whether the API holds a recoverable key, one not deleted", async () => {
    const { client, seed } = memoryKeys({ encryptionKey: TEST_ENCRYPTION_KEY });
    const apiId = await seed.api();
    const caller = callerOf("ws_1", `api.${apiId}.read_api`);
    await seed.key({ apiId });
    expect((await client.getApi({ caller, apiId })).holdsRecoverableKeys).toBe(false);
    const { keyId } = await seed.key({ apiId, recoverable: true });
    expect((await client.getApi({ caller, apiId })).holdsRecoverableKeys).toBe(true);
    await client.deleteKey({ caller: callerOf("ws_1", "*"), keyId });
    expect((await client.getApi({ caller, apiId })).holdsRecoverableKeys).toBe(false);
  });
});
