import { RefillInterval, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";

const updater = callerOf("ws_1", "api.*.update_key");
/** Replaces roles and permissions too (rbac-changes.test.ts). */
const grantsEditor = callerOf(
  "ws_1",
  "api.*.update_key",
  "rbac.*.add_role_to_key",
  "rbac.*.remove_role_from_key",
  "rbac.*.add_permission_to_key",
  "rbac.*.remove_permission_from_key",
);
const verifier = callerOf("ws_1", "api.*.verify_key");
const admin = callerOf("ws_1", "*");

async function fullKey(m: ReturnType<typeof memoryKeys>) {
  const apiId = await m.seed.api();
  return m.client.createKey({
    caller: admin,
    apiId,
    name: "before",
    externalId: "user_1",
    metaJson: '{"a":1}',
    expires: 4_000_000_000_000n,
    permissions: ["p.old"],
    credits: { remaining: 10n, refill: { interval: RefillInterval.DAILY, amount: 10n } },
    ratelimits: [
      { name: "stays", limit: 1n, duration: 1000n, autoApply: false },
      { name: "goes", limit: 2n, duration: 2000n, autoApply: true },
    ],
  });
}

describe("updateKey", () => {
  it("leaves every omitted field unchanged", async () => {
    const m = memoryKeys();
    const { keyId } = await fullKey(m);
    const before = (await m.client.getKey({ caller: admin, keyId })).key;
    m.clock.advance(5);
    expect(await m.client.updateKey({ caller: updater, keyId })).toEqual(expect.objectContaining({}));
    const after = (await m.client.getKey({ caller: admin, keyId })).key;
    expect({ ...after, updatedAt: undefined }).toEqual({ ...before, updatedAt: undefined });
    expect(after?.updatedAt).toBe(BigInt(m.clock.now()));
  });

  it("replaces given fields and clears those named in cleared", async () => {
    const m = memoryKeys();
    const { keyId } = await fullKey(m);
    await m.client.updateKey({
      caller: grantsEditor,
      keyId,
      name: "after",
      metaJson: '{"b":2}',
      enabled: false,
      permissions: { values: ["p.new", "p.new"] },
      cleared: ["externalId", "expires"],
    });
    const key = (await m.client.getKey({ caller: admin, keyId })).key;
    expect(key).toMatchObject({ name: "after", metaJson: '{"b":2}', enabled: false, permissions: ["p.new"] });
    expect(key?.expires).toBeUndefined();
    expect((await m.deps.store.findKeyById(keyId))?.externalId).toBeNull();
    await m.client.updateKey({ caller: updater, keyId, cleared: ["name", "meta"] });
    const cleared = (await m.client.getKey({ caller: admin, keyId })).key;
    expect(cleared?.name).toBeUndefined();
    expect(cleared?.metaJson).toBeUndefined();
  });

  it("reaches the very next verification", async () => {
    const m = memoryKeys();
    const { keyId, key } = await fullKey(m);
    expect((await m.client.verifyKey({ caller: verifier, key })).code).toBe(VerifyCode.VALID);
    await m.client.updateKey({ caller: updater, keyId, enabled: false });
    expect((await m.client.verifyKey({ caller: verifier, key })).code).toBe(VerifyCode.DISABLED);
    await m.client.updateKey({ caller: updater, keyId, enabled: true, expires: 1n });
    expect((await m.client.verifyKey({ caller: verifier, key })).code).toBe(VerifyCode.EXPIRED);
  });

  it("makes the key unlimited and clears its refill when credits is null", async () => {
    for (const path of ["credits", "credits.remaining"]) {
      const m = memoryKeys();
      const { keyId, key } = await fullKey(m);
      await m.client.verifyKey({ caller: verifier, key });
      await m.client.updateKey({ caller: updater, keyId, cleared: [path] });
      expect((await m.client.getKey({ caller: admin, keyId })).key?.credits).toBeUndefined();
      expect((await m.deps.store.findKeyById(keyId))?.refill).toBeNull();
      expect((await m.client.verifyKey({ caller: verifier, key })).credits).toBeUndefined();
    }
  });

  it("stops the refill and keeps the balance when credits.refill is null", async () => {
    const m = memoryKeys();
    const { keyId, key } = await fullKey(m);
    await m.client.verifyKey({ caller: verifier, key, cost: 3n });
    await m.client.updateKey({ caller: updater, keyId, cleared: ["credits.refill"] });
    const credits = (await m.client.getKey({ caller: admin, keyId })).key?.credits;
    expect(credits?.remaining).toBe(7n);
    expect(credits?.refill).toBeUndefined();
    m.clock.advance(3 * 86_400_000);
    expect((await m.client.verifyKey({ caller: verifier, key })).credits).toBe(6n);
  });

  it("sets the balance and a refill that starts from now", async () => {
    const m = memoryKeys();
    const { keyId, key } = await m.seed.key({ apiId: await m.seed.api() });
    await m.client.updateKey({
      caller: updater,
      keyId,
      credits: { remaining: 2n, refill: { interval: RefillInterval.DAILY, amount: 5n } },
    });
    expect((await m.client.verifyKey({ caller: verifier, key })).credits).toBe(1n);
    m.clock.set(Math.ceil(m.clock.now() / 86_400_000 + 1e-9) * 86_400_000);
    expect((await m.client.verifyKey({ caller: verifier, key })).credits).toBe(4n);
  });

  it("replaces rate limits by name: a name that stays keeps its id", async () => {
    const m = memoryKeys();
    const { keyId } = await fullKey(m);
    const before = (await m.client.getKey({ caller: admin, keyId })).key!.ratelimits;
    await m.client.updateKey({
      caller: updater,
      keyId,
      ratelimits: {
        ratelimits: [
          { name: "stays", limit: 9n, duration: 9000n, autoApply: true },
          { name: "new", limit: 3n, duration: 3000n, autoApply: false },
        ],
      },
    });
    const after = (await m.client.getKey({ caller: admin, keyId })).key!.ratelimits;
    const byName = new Map(after.map((r) => [r.name, r]));
    expect([...byName.keys()].sort()).toEqual(["new", "stays"]);
    expect(byName.get("stays")).toMatchObject({
      id: before.find((r) => r.name === "stays")?.id,
      limit: 9n,
      duration: 9000n,
      autoApply: true,
    });
    expect(byName.get("new")?.id).toMatch(/^rl_/);
    await m.client.updateKey({ caller: updater, keyId, ratelimits: { ratelimits: [] } });
    expect((await m.client.getKey({ caller: admin, keyId })).key!.ratelimits).toEqual([]);
  });

  it("answers ROLE_NOT_FOUND for roles that do not exist and changes nothing", async () => {
    const m = memoryKeys();
    const { keyId } = await fullKey(m);
    expect(
      await rejection(
        m.client.updateKey({ caller: grantsEditor, keyId, name: "x", roles: { values: ["admin"] } }),
      ),
    ).toEqual({ reason: ErrorReason.ROLE_NOT_FOUND, message: "Role 'admin' was not found." });
    expect((await m.client.getKey({ caller: admin, keyId })).key?.name).toBe("before");
  });

  it("answers INVALID_INPUT naming a field that cannot be null, or one both given and null", async () => {
    const m = memoryKeys();
    const { keyId } = await fullKey(m);
    expect(await rejection(m.client.updateKey({ caller: updater, keyId, cleared: ["enabled"] }))).toEqual({
      reason: ErrorReason.INVALID_INPUT,
      message: "'enabled' cannot be null",
    });
    expect(
      await rejection(m.client.updateKey({ caller: updater, keyId, name: "x", cleared: ["name"] })),
    ).toEqual({
      reason: ErrorReason.INVALID_INPUT,
      message: "name is both given and null",
    });
  });

  it("answers INVALID_INPUT for a refill on an unlimited key without a balance", async () => {
    const m = memoryKeys();
    const { keyId } = await m.seed.key({ apiId: await m.seed.api() });
    const failure = await rejection(
      m.client.updateKey({
        caller: updater,
        keyId,
        credits: { refill: { interval: RefillInterval.DAILY, amount: 5n } },
      }),
    );
    expect(failure).toEqual({
      reason: ErrorReason.INVALID_INPUT,
      message: "remaining must be set when refill is set on a key with unlimited credits",
    });
  });

  it("answers INSUFFICIENT_PERMISSIONS without update_key and KEY_NOT_FOUND across workspaces", async () => {
    const m = memoryKeys();
    const { keyId } = await fullKey(m);
    expect(
      (await rejection(m.client.updateKey({ caller: callerOf("ws_1", "api.*.read_key"), keyId, name: "x" })))
        .reason,
    ).toBe(ErrorReason.INSUFFICIENT_PERMISSIONS);
    const theirs = await m.seed.key({ apiId: await m.seed.api("ws_2"), workspaceId: "ws_2" });
    expect(
      (await rejection(m.client.updateKey({ caller: admin, keyId: theirs.keyId, name: "x" }))).reason,
    ).toBe(ErrorReason.KEY_NOT_FOUND);
  });

  it("links the key to another identity by externalId, creating it, and unlinks it with null", async () => {
    const m = memoryKeys();
    const { keyId } = await fullKey(m);
    const before = await m.deps.store.findKeyById(keyId);
    expect(before?.identityId).toMatch(/^id_/);
    await m.client.updateKey({ caller: updater, keyId, externalId: "user_2" });
    const user2 = (await m.identity.getIdentity({ caller: admin, identity: "user_2" })).identity!;
    expect(user2.id).not.toBe(before?.identityId);
    expect(await m.deps.store.findKeyById(keyId)).toMatchObject({
      externalId: "user_2",
      identityId: user2.id,
    });
    expect((await m.client.getKey({ caller: admin, keyId })).key?.identity?.externalId).toBe("user_2");
    await m.client.updateKey({ caller: updater, keyId, cleared: ["externalId"] });
    expect(await m.deps.store.findKeyById(keyId)).toMatchObject({ externalId: null, identityId: null });
    expect((await m.client.getKey({ caller: admin, keyId })).key?.identity).toBeUndefined();
  });

  it("replaces roles with existing ones and creates the permission slugs it names", async () => {
    const m = memoryKeys();
    const { keyId } = await fullKey(m);
    await m.rbac.role("reader", ["docs.read"]);
    await m.client.updateKey({
      caller: grantsEditor,
      keyId,
      roles: { values: ["reader", "reader"] },
      permissions: { values: ["p.fresh"] },
    });
    expect(await m.deps.store.findKeyById(keyId)).toMatchObject({
      roles: ["reader"],
      permissions: ["p.fresh"],
    });
    expect((await m.identity.getPermission({ caller: admin, permission: "p.fresh" })).permission?.slug).toBe(
      "p.fresh",
    );
  });
});
