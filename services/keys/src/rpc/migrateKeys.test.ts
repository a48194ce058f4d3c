import { createHash } from "node:crypto";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason, hashKey } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { hashIsolationSuite } from "../../testing/hash-isolation.suite.ts";
import { callerOf, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

const verifier = callerOf("ws_1", "api.*.verify_key");
const importer = callerOf("ws_1", "api.*.create_key");
/** Imports keys with roles and permissions (rbac-changes.test.ts). */
const grantingImporter = callerOf(
  "ws_1",
  "api.*.create_key",
  "rbac.*.add_role_to_key",
  "rbac.*.add_permission_to_key",
);
const hex = (plaintext: string) => createHash("sha256").update(plaintext).digest("hex");

describe("migrateKeys", () => {
  it("imports keys by base64 or hex SHA-256 so the existing strings verify", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const res = await client.migrateKeys({
      caller: importer,
      migrationId: "from-legacy",
      apiId,
      keys: [
        { hash: hashKey("legacy_one"), name: "one", credits: { remaining: 2n }, start: "legacy_" },
        { hash: hex("legacy_two"), externalId: "user_2", metaJson: '{"tier":"gold"}' },
      ],
    });
    expect(res.failed).toEqual([]);
    expect(res.migrated.map((m) => m.hash)).toEqual([hashKey("legacy_one"), hex("legacy_two")]);
    expect(await client.verifyKey({ caller: verifier, key: "legacy_one" })).toMatchObject({
      code: VerifyCode.VALID,
      keyId: res.migrated[0]?.keyId,
      name: "one",
      credits: 1n,
    });
    expect(await client.verifyKey({ caller: verifier, key: "legacy_two" })).toMatchObject({
      code: VerifyCode.VALID,
      keyId: res.migrated[1]?.keyId,
      metaJson: '{"tier":"gold"}',
    });
  });

  it("answers a hash already stored, or repeated, in failed and imports the rest", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const existing = await seed.key({ apiId });
    const res = await client.migrateKeys({
      caller: importer,
      migrationId: "m",
      apiId,
      keys: [{ hash: existing.hash }, { hash: hex("new") }, { hash: hashKey("new") }],
    });
    expect(res.migrated.map((m) => m.hash)).toEqual([hex("new")]);
    expect(res.failed).toEqual([hashKey("new"), existing.hash]);
  });

  it("forgets a cached miss, so a key verified before its import verifies after it", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    expect((await client.verifyKey({ caller: verifier, key: "legacy_late" })).code).toBe(
      VerifyCode.NOT_FOUND,
    );
    await client.migrateKeys({
      caller: importer,
      migrationId: "m",
      apiId,
      keys: [{ hash: hashKey("legacy_late") }],
    });
    expect((await client.verifyKey({ caller: verifier, key: "legacy_late" })).code).toBe(VerifyCode.VALID);
  });

  it("answers INVALID_INPUT naming a hash that is not a SHA-256", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const failure = await rejection(
      client.migrateKeys({
        caller: importer,
        migrationId: "m",
        apiId,
        keys: [{ hash: hex("a") }, { hash: "abc" }],
      }),
    );
    expect(failure).toEqual({
      reason: ErrorReason.INVALID_INPUT,
      message: "hash must be the SHA-256 of the key, as 64 hex characters or 44 base64 characters",
    });
  });

  it("answers INVALID_INPUT without a migrationId or without keys", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    expect(
      (
        await rejection(
          client.migrateKeys({ caller: importer, migrationId: "", apiId, keys: [{ hash: hex("a") }] }),
        )
      ).reason,
    ).toBe(ErrorReason.INVALID_INPUT);
    expect(
      (await rejection(client.migrateKeys({ caller: importer, migrationId: "m", apiId, keys: [] }))).reason,
    ).toBe(ErrorReason.INVALID_INPUT);
  });

  it("masks a missing create_key as API_NOT_FOUND, as for another workspace's API", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const keys = [{ hash: hex("x") }];
    const notFound = { reason: ErrorReason.API_NOT_FOUND, message: "The specified API was not found." };
    expect(
      await rejection(
        client.migrateKeys({ caller: callerOf("ws_1", "api.*.read_key"), migrationId: "m", apiId, keys }),
      ),
    ).toEqual(notFound);
    expect(
      await rejection(
        client.migrateKeys({ caller: importer, migrationId: "m", apiId: await seed.api("ws_2"), keys }),
      ),
    ).toEqual(notFound);
    expect((await client.verifyKey({ caller: verifier, key: "x" })).code).toBe(VerifyCode.NOT_FOUND);
  });

  it("links imported keys to their identities (one per externalId) and keeps existing roles", async () => {
    const m = memoryKeys();
    const apiId = await m.seed.api();
    await m.rbac.role("reader", ["docs.read"]);
    const res = await m.client.migrateKeys({
      caller: grantingImporter,
      migrationId: "m1",
      apiId,
      keys: [
        { hash: hashKey("one"), externalId: "user_1", roles: ["reader"], permissions: ["p.one"] },
        { hash: hashKey("two"), externalId: "user_1" },
      ],
    });
    const identity = (await m.identity.getIdentity({ caller: m.admin, identity: "user_1" })).identity!;
    const [one, two] = await Promise.all(res.migrated.map((k) => m.deps.store.findKeyById(k.keyId)));
    expect(one).toMatchObject({ identityId: identity.id, roles: ["reader"], permissions: ["p.one"] });
    expect(two?.identityId).toBe(identity.id);
    expect((await m.identity.getPermission({ caller: m.admin, permission: "p.one" })).permission?.slug).toBe(
      "p.one",
    );
  });

  it("answers ROLE_NOT_FOUND for a role that does not exist and imports nothing", async () => {
    const m = memoryKeys();
    const apiId = await m.seed.api();
    const failure = await rejection(
      m.client.migrateKeys({
        caller: grantingImporter,
        migrationId: "m1",
        apiId,
        keys: [{ hash: hashKey("one"), roles: ["ghost"] }],
      }),
    );
    expect(failure).toEqual({ reason: ErrorReason.ROLE_NOT_FOUND, message: "Role 'ghost' was not found." });
    expect(await m.deps.store.findKeyByHash("ws_1", hashKey("one"))).toBeUndefined();
  });
});

describe("migrateKeys across workspaces (in memory)", () => {
  hashIsolationSuite(async () => ({ client: memoryKeys().client, workspaces: ["ws_1", "ws_2"] }));
});
