import type { Client } from "@connectrpc/connect";
import { type KeysService, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason, hashKey } from "@latchkey/runtime";
import { expect, it } from "vitest";
import { callerOf, rejection } from "./in-memory-keys.ts";

/**
 * A key's hash is unique within its workspace only: the same key string
 * stored in two workspaces is two keys that never meet, and importing a hash
 * that another workspace holds tells nothing about it. Run against the
 * in-memory service and against PostgreSQL (hash-isolation.int.test.ts).
 */
export function hashIsolationSuite(
  setup: () => Promise<{ client: Client<typeof KeysService>; workspaces: [string, string] }>,
) {
  it("imports into B a hash that A holds, and each workspace verifies only its own key", async () => {
    const { client, workspaces } = await setup();
    const [a, b] = workspaces.map((ws) => callerOf(ws, "*"));
    const apiA = (await client.createApi({ caller: a, name: "a" })).apiId;
    const apiB = (await client.createApi({ caller: b, name: "b" })).apiId;
    const mine = await client.createKey({ caller: a, apiId: apiA, name: "A's", metaJson: '{"owner":"a"}' });
    const hash = hashKey(mine.key);
    // B has looked the key string up before its import: what it cached for itself must not stay.
    expect((await client.verifyKey({ caller: b, key: mine.key })).code).toBe(VerifyCode.NOT_FOUND);

    const imported = await client.migrateKeys({
      caller: b,
      migrationId: "legacy",
      apiId: apiB,
      keys: [{ hash, name: "B's", metaJson: '{"owner":"b"}', credits: { remaining: 1n } }],
    });
    expect(imported.failed).toEqual([]);
    expect(imported.migrated.map((m) => m.hash)).toEqual([hash]);
    const theirs = imported.migrated[0]!.keyId;
    expect(theirs).not.toBe(mine.keyId);

    const asA = await client.verifyKey({ caller: a, key: mine.key });
    expect(asA).toMatchObject({ code: VerifyCode.VALID, keyId: mine.keyId, name: "A's" });
    expect(JSON.parse(asA.metaJson ?? "null")).toEqual({ owner: "a" });
    expect(asA.credits).toBeUndefined();
    const asB = await client.verifyKey({ caller: b, key: mine.key });
    expect(asB).toMatchObject({ code: VerifyCode.VALID, keyId: theirs, name: "B's", credits: 0n });
    expect(JSON.parse(asB.metaJson ?? "null")).toEqual({ owner: "b" });
    expect((await client.whoami({ caller: a, key: mine.key })).key?.keyId).toBe(mine.keyId);
    expect((await client.whoami({ caller: b, key: mine.key })).key?.keyId).toBe(theirs);

    // A change to one is not the other's: B's spent credits, then B's key disabled and deleted.
    expect((await client.verifyKey({ caller: b, key: mine.key })).code).toBe(VerifyCode.USAGE_EXCEEDED);
    await client.updateKey({ caller: b, keyId: theirs, enabled: false });
    expect((await client.verifyKey({ caller: b, key: mine.key })).code).toBe(VerifyCode.DISABLED);
    expect(await client.verifyKey({ caller: a, key: mine.key })).toMatchObject({
      code: VerifyCode.VALID,
      keyId: mine.keyId,
    });
    await client.deleteKey({ caller: b, keyId: theirs });
    expect((await client.verifyKey({ caller: b, key: mine.key })).code).toBe(VerifyCode.NOT_FOUND);
    expect((await client.verifyKey({ caller: a, key: mine.key })).keyId).toBe(mine.keyId);
    // Neither sees the other's key by id either.
    expect((await rejection(client.getKey({ caller: a, keyId: theirs }))).reason).toBe(
      ErrorReason.KEY_NOT_FOUND,
    );
    expect((await rejection(client.getKey({ caller: b, keyId: mine.keyId }))).reason).toBe(
      ErrorReason.KEY_NOT_FOUND,
    );
  });

  it("still answers the same hash twice in one workspace as failed, whether stored before or repeated", async () => {
    const { client, workspaces } = await setup();
    const b = callerOf(workspaces[1], "*");
    const apiB = (await client.createApi({ caller: b, name: "b" })).apiId;
    const hash = hashKey(`legacy_${Math.random()}`);
    const first = await client.migrateKeys({ caller: b, migrationId: "m1", apiId: apiB, keys: [{ hash }] });
    expect(first.failed).toEqual([]);
    const again = await client.migrateKeys({
      caller: b,
      migrationId: "m2",
      apiId: apiB,
      keys: [{ hash }, { hash: hashKey("fresh_one") }, { hash: hashKey("fresh_one") }],
    });
    expect(again.migrated.map((m) => m.hash)).toEqual([hashKey("fresh_one")]);
    expect(again.failed).toEqual([hashKey("fresh_one"), hash]);
  });
}
