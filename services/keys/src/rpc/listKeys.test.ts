import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection, TEST_ENCRYPTION_KEY } from "../../testing/in-memory-keys.ts";

const reader = callerOf("ws_1", "api.*.read_key", "api.*.read_api");

describe("listKeys", () => {
  it("pages through the API's live keys in a stable order, 100 by default", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const created = [];
    for (let i = 0; i < 5; i++) created.push(await seed.key({ apiId, name: `k${i}` }));
    await seed.key({ apiId: await seed.api() });
    await client.deleteKey({ caller: callerOf("ws_1", "*"), keyId: created[4]!.keyId });
    const all = await client.listKeys({ caller: reader, apiId });
    const ids = created
      .slice(0, 4)
      .map((k) => k.keyId)
      .sort();
    expect(all.keys.map((k) => k.keyId)).toEqual(ids);
    expect(all.pagination).toMatchObject({ cursor: "", hasMore: false });

    const first = await client.listKeys({ caller: reader, apiId, limit: 3 });
    expect(first.keys.map((k) => k.keyId)).toEqual(ids.slice(0, 3));
    expect(first.pagination?.hasMore).toBe(true);
    const second = await client.listKeys({
      caller: reader,
      apiId,
      limit: 3,
      cursor: first.pagination!.cursor,
    });
    expect(second.keys.map((k) => k.keyId)).toEqual(ids.slice(3));
    expect(second.pagination).toMatchObject({ cursor: "", hasMore: false });
  });

  it("filters by externalId", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const alice = await seed.key({ apiId, externalId: "alice" });
    await seed.key({ apiId, externalId: "bob" });
    const res = await client.listKeys({ caller: reader, apiId, externalId: "alice" });
    expect(res.keys.map((k) => k.keyId)).toEqual([alice.keyId]);
  });

  it("returns plaintexts of recoverable keys with decrypt to a holder of decrypt_key", async () => {
    const { client, seed } = memoryKeys({ encryptionKey: TEST_ENCRYPTION_KEY });
    const apiId = await seed.api();
    const recoverable = await seed.key({ apiId, recoverable: true });
    const plain = await seed.key({ apiId });
    const res = await client.listKeys({
      caller: callerOf("ws_1", "api.*.read_key", "api.*.read_api", `api.${apiId}.decrypt_key`),
      apiId,
      decrypt: true,
    });
    const byId = new Map(res.keys.map((k) => [k.keyId, k.plaintext]));
    expect(byId.get(recoverable.keyId)).toBe(recoverable.key);
    expect(byId.get(plain.keyId)).toBeUndefined();
    const refused = await rejection(client.listKeys({ caller: reader, apiId, decrypt: true }));
    expect(refused.reason).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
  });

  it("masks a missing read_key or read_api as API_NOT_FOUND, as for another workspace's API", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const notFound = { reason: ErrorReason.API_NOT_FOUND, message: "The specified API was not found." };
    expect(await rejection(client.listKeys({ caller: callerOf("ws_1", "api.*.read_key"), apiId }))).toEqual(
      notFound,
    );
    expect(await rejection(client.listKeys({ caller: callerOf("ws_1", "api.*.read_api"), apiId }))).toEqual(
      notFound,
    );
    const theirs = await seed.api("ws_2");
    expect(await rejection(client.listKeys({ caller: reader, apiId: theirs }))).toEqual(notFound);
  });

  it("answers INVALID_INPUT naming limit outside 1 to 100", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    for (const limit of [0, 101]) {
      expect(await rejection(client.listKeys({ caller: reader, apiId, limit }))).toEqual({
        reason: ErrorReason.INVALID_INPUT,
        message: `limit must be between 1 and 100, got ${limit}`,
      });
    }
  });

  it("answers each key's identity", async () => {
    const m = memoryKeys();
    const apiId = await m.seed.api();
    await m.seed.key({ apiId, externalId: "user_1" });
    await m.seed.key({ apiId, externalId: "user_2" });
    await m.seed.key({ apiId });
    const { keys } = await m.client.listKeys({ caller: m.admin, apiId });
    expect(keys.map((k) => k.identity?.externalId ?? null).sort()).toEqual(["user_1", "user_2", null].sort());
    const ids = new Set(keys.flatMap((k) => (k.identity ? [k.identity.id] : [])));
    expect(ids.size).toBe(2);
  });
});
