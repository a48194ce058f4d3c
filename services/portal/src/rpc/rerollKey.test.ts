import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, fakeKeys, harness, root } from "../../testing/in-memory-portal.ts";

/** A session for user u over an API holding key_plain and key_sealed (recoverable), minted by `minter`. */
async function sessionOver(...minter: string[]) {
  const keys = fakeKeys({
    holdsRecoverableKeys: true,
    keys: {
      key_plain: { externalId: "u", recoverable: false },
      key_sealed: { externalId: "u", recoverable: true },
    },
  });
  const { client, portal } = await harness({ keys: keys.transport });
  const minted = await client.createSession({
    caller: root(...minter),
    portal: portal.id,
    externalId: "u",
    scopes: ["keys:reroll"],
  });
  const { accessToken } = await client.exchangeCode({ code: minted.code });
  return { client, keys, auth: { token: accessToken } };
}

describe("RerollKey of recoverable keys", () => {
  it("hands keys.rerollKey encrypt_key for a recoverable key only, when the minter held it", async () => {
    const { client, keys, auth } = await sessionOver("*");
    const reroll = (keyId: string) => client.rerollKey({ auth, keyId, expiration: 0n });
    expect(await reroll("key_sealed")).toMatchObject({ keyId: "key_rerolled", key: "sk_rerolled" });
    expect(await reroll("key_plain")).toMatchObject({ keyId: "key_rerolled" });
    expect(keys.calls.filter((c) => c.rpc === "rerollKey").map((c) => c.permissions)).toEqual([
      ["api.api_1.create_key", "api.api_1.read_key", "api.api_1.encrypt_key"],
      ["api.api_1.create_key", "api.api_1.read_key"],
    ]);
  });

  it("answers 403 naming encrypt_key for a recoverable key of a session minted without it, asking nothing", async () => {
    // Minted while the API held no recoverable key: the session carries no encrypt_key.
    const keys = fakeKeys({
      holdsRecoverableKeys: false,
      keys: { key_sealed: { externalId: "u", recoverable: true } },
    });
    const { client, portal } = await harness({ keys: keys.transport });
    const minted = await client.createSession({
      caller: root("portal.*.create_portal_session", "api.api_1.create_key"),
      portal: portal.id,
      externalId: "u",
      scopes: ["keys:reroll"],
    });
    const { accessToken } = await client.exchangeCode({ code: minted.code });
    await expectReason(
      client.rerollKey({ auth: { token: accessToken }, keyId: "key_sealed", expiration: 0n }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      {
        message:
          "The key is recoverable, and this portal session may not reroll recoverable keys: it needs a session minted by a root key holding 'api.api_1.encrypt_key'.",
      },
    );
    expect(keys.calls.map((c) => c.rpc)).toEqual(["getApi", "getKey"]);
  });
});

describe("CreateKey and recoverable keys", () => {
  /** A keys:create session for user u over api_1, minted by a root key holding everything. */
  async function createdWith(holdsRecoverableKeys: boolean) {
    const keys = fakeKeys({ holdsRecoverableKeys });
    const { client, portal } = await harness({ keys: keys.transport });
    const minted = await client.createSession({
      caller: root("*"),
      portal: portal.id,
      externalId: "u",
      scopes: ["keys:create"],
    });
    const { accessToken } = await client.exchangeCode({ code: minted.code });
    expect(await client.createKey({ auth: { token: accessToken } })).toMatchObject({ keyId: "key_created" });
    return keys.calls.filter((c) => c.rpc === "createKey");
  }

  it("creates a recoverable key, handing encrypt_key on, over an API holding recoverable keys", async () => {
    expect(await createdWith(true)).toEqual([
      { rpc: "createKey", permissions: ["api.api_1.create_key", "api.api_1.encrypt_key"], recoverable: true },
    ]);
  });

  it("creates a plain key with create_key alone over an API holding none", async () => {
    expect(await createdWith(false)).toEqual([
      { rpc: "createKey", permissions: ["api.api_1.create_key"], recoverable: false },
    ]);
  });
});

describe("RerollKey of keys holding roles or permissions", () => {
  /** A keys:reroll session for user u over api_1, whose keys hold roles, permissions, both or neither. */
  async function sessionOver(minter: string[], options: { preview?: boolean } = {}) {
    const keys = fakeKeys({
      holdsRecoverableKeys: false,
      keys: {
        key_plain: { externalId: "u", recoverable: false },
        key_roles: { externalId: "u", recoverable: false, roles: ["admin"] },
        key_perms: { externalId: "u", recoverable: false, permissions: ["documents.read"] },
        key_both: { externalId: "u", recoverable: false, roles: ["admin"], permissions: ["documents.read"] },
      },
    });
    const { client, deps, portal } = await harness({ keys: keys.transport });
    const minted = await client.createSession({
      caller: root(...minter),
      portal: portal.id,
      externalId: "u",
      scopes: ["keys:reroll"],
      ...options,
    });
    const { accessToken } = await client.exchangeCode({ code: minted.code });
    const reroll = (keyId: string) =>
      client.rerollKey({ auth: { token: accessToken }, keyId, expiration: 0n });
    return { keys, deps, reroll, sessionId: minted.sessionId };
  }
  const minter = ["portal.*.create_portal_session", "api.api_1.create_key"];
  const handedOn = (keys: ReturnType<typeof fakeKeys>) =>
    keys.calls.filter((c) => c.rpc === "rerollKey").map((c) => c.permissions);

  it("hands on exactly the rbac permissions a key's roles and permissions need, when the minter held them", async () => {
    const { keys, deps, reroll, sessionId } = await sessionOver([
      ...minter,
      "rbac.*.add_role_to_key",
      "rbac.*.add_permission_to_key",
    ]);
    expect(deps.store.sessions.get(sessionId)?.rbacPermissions).toEqual([
      "rbac.*.add_role_to_key",
      "rbac.*.add_permission_to_key",
    ]);
    for (const keyId of ["key_plain", "key_roles", "key_perms", "key_both"]) {
      expect(await reroll(keyId)).toMatchObject({ keyId: "key_rerolled", key: "sk_rerolled" });
    }
    expect(handedOn(keys)).toEqual([
      ["api.api_1.create_key", "api.api_1.read_key"],
      ["api.api_1.create_key", "api.api_1.read_key", "rbac.*.add_role_to_key"],
      ["api.api_1.create_key", "api.api_1.read_key", "rbac.*.add_permission_to_key"],
      [
        "api.api_1.create_key",
        "api.api_1.read_key",
        "rbac.*.add_role_to_key",
        "rbac.*.add_permission_to_key",
      ],
    ]);
  });

  it("marks a session minted by a root key holding every permission (*)", async () => {
    const { keys, deps, reroll, sessionId } = await sessionOver(["*"]);
    expect(deps.store.sessions.get(sessionId)?.rbacPermissions).toEqual([
      "rbac.*.add_role_to_key",
      "rbac.*.add_permission_to_key",
    ]);
    expect(await reroll("key_both")).toMatchObject({ keyId: "key_rerolled" });
    expect(handedOn(keys)).toEqual([
      [
        "api.api_1.create_key",
        "api.api_1.read_key",
        "rbac.*.add_role_to_key",
        "rbac.*.add_permission_to_key",
      ],
    ]);
  });

  it("answers 403 naming what the minter lacked for a key holding roles or permissions, asking the keys service nothing", async () => {
    const { keys, deps, reroll, sessionId } = await sessionOver(minter);
    expect(deps.store.sessions.get(sessionId)?.rbacPermissions).toEqual([]);
    const cases: [string, string][] = [
      [
        "key_roles",
        "The key holds roles, and this portal session may not give them to a new key: it needs a session minted by a root key holding 'rbac.*.add_role_to_key'.",
      ],
      [
        "key_perms",
        "The key holds permissions, and this portal session may not give them to a new key: it needs a session minted by a root key holding 'rbac.*.add_permission_to_key'.",
      ],
      [
        "key_both",
        "The key holds roles and permissions, and this portal session may not give them to a new key: it needs a session minted by a root key holding 'rbac.*.add_role_to_key' and 'rbac.*.add_permission_to_key'.",
      ],
    ];
    for (const [keyId, message] of cases) {
      await expectReason(reroll(keyId), ErrorReason.INSUFFICIENT_PERMISSIONS, { message });
    }
    // The API was read once at mint; each refusal read only the key.
    expect(keys.calls.map((c) => c.rpc)).toEqual(["getApi", "getKey", "getKey", "getKey"]);
    // A key holding neither is rerolled as before, with nothing more handed on.
    expect(await reroll("key_plain")).toMatchObject({ keyId: "key_rerolled" });
    expect(handedOn(keys)).toEqual([["api.api_1.create_key", "api.api_1.read_key"]]);
  });

  it("names only the one the minter lacked when it held the other", async () => {
    const { keys, reroll } = await sessionOver([...minter, "rbac.*.add_role_to_key"]);
    await expectReason(reroll("key_both"), ErrorReason.INSUFFICIENT_PERMISSIONS, {
      message:
        "The key holds permissions, and this portal session may not give them to a new key: it needs a session minted by a root key holding 'rbac.*.add_permission_to_key'.",
    });
    expect(await reroll("key_roles")).toMatchObject({ keyId: "key_rerolled" });
    expect(handedOn(keys)).toEqual([
      ["api.api_1.create_key", "api.api_1.read_key", "rbac.*.add_role_to_key"],
    ]);
  });
});
