import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { expectReason, fakeKeys, harness, root } from "../../testing/in-memory-portal.ts";
import { hashOf } from "../tokens.ts";

describe("CreateSession", () => {
  it("mints a session by id or slug, keeping only the code's hash, valid 60 s", async () => {
    const { client, deps, portal, clock } = await harness();
    const caller = root("*");
    const res = await client.createSession({
      caller,
      portal: "acme",
      externalId: "u",
      scopes: ["keys:read"],
    });
    expect(res.code).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);
    expect(res.codeExpiresAt).toBe(BigInt(clock.now() + 60_000));
    const stored = deps.store.sessions.get(res.sessionId)!;
    expect(stored).toMatchObject({
      portalId: portal.id,
      externalId: "u",
      codeHash: hashOf(res.code),
      tokenHash: null,
    });
    expect(JSON.stringify([...deps.store.sessions.values()])).not.toContain(res.code);
    const byId = await client.createSession({
      caller,
      portal: portal.id,
      externalId: "u",
      scopes: ["keys:read"],
    });
    expect(deps.store.sessions.get(byId.sessionId)?.portalId).toBe(portal.id);
  });

  it("answers a portal the root key may not mint for as a missing one, and a scope it cannot grant 403", async () => {
    const { client, portal } = await harness({ keys: fakeKeys({ holdsRecoverableKeys: false }).transport });
    const body = { portal: portal.id, externalId: "u", scopes: ["keys:read"] };
    const message = `The portal '${portal.id}' does not exist.`;
    await expectReason(
      client.createSession({ ...body, caller: root("api.*.read_key") }),
      ErrorReason.PORTAL_NOT_FOUND,
      {
        message,
      },
    );
    await expectReason(
      client.createSession({
        ...body,
        caller: root("portal.portal_other.create_portal_session", "api.*.read_key"),
      }),
      ErrorReason.PORTAL_NOT_FOUND,
      { message },
    );
    await expectReason(
      client.createSession({
        ...body,
        caller: root(`portal.${portal.id}.create_portal_session`, "api.api_1.read_key"),
      }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      { message: "The root key lacks the permission 'api.api_1.read_api'." },
    );
    await expectReason(
      client.createSession({
        ...body,
        scopes: ["analytics:read"],
        caller: root("portal.*.create_portal_session", "api.api_2.read_analytics"),
      }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
    const ok = await client.createSession({
      ...body,
      scopes: ["analytics:read", "keys:create"],
      caller: root("portal.*.create_portal_session", "api.*.read_analytics", "api.api_1.create_key"),
    });
    expect(ok.sessionId).toMatch(/^ps_/);
  });

  it("refuses bad input naming the field", async () => {
    const { client, portal } = await harness();
    const caller = root("*");
    const body = { caller, portal: portal.id, externalId: "u", scopes: ["keys:read"] };
    await expectReason(
      client.createSession({ ...body, scopes: ["keys:delete"] }),
      ErrorReason.INVALID_INPUT,
      {
        location: "/scopes/0",
      },
    );
    await expectReason(client.createSession({ ...body, scopes: [] }), ErrorReason.INVALID_INPUT, {
      location: "/scopes",
    });
    await expectReason(client.createSession({ ...body, externalId: "" }), ErrorReason.INVALID_INPUT, {
      location: "/externalId",
    });
    await expectReason(
      client.createSession({ ...body, returnUrl: "javascript:alert(1)" }),
      ErrorReason.INVALID_INPUT,
      {
        location: "/returnUrl",
      },
    );
  });

  it("over an API holding recoverable keys, asks encrypt_key for keys:reroll and keys:create (403 naming it)", async () => {
    const keys = fakeKeys({ holdsRecoverableKeys: true });
    const { client, deps, portal } = await harness({ keys: keys.transport });
    const body = { portal: portal.id, externalId: "u" };
    const minter = [
      `portal.${portal.id}.create_portal_session`,
      "api.api_1.create_key",
      "api.api_1.read_key",
    ];
    for (const scopes of [["keys:reroll"], ["keys:create"], ["keys:read", "keys:reroll", "keys:create"]]) {
      await expectReason(
        client.createSession({ ...body, scopes, caller: root(...minter, "api.api_1.read_api") }),
        ErrorReason.INSUFFICIENT_PERMISSIONS,
        { message: "The root key lacks the permission 'api.api_1.encrypt_key'." },
      );
    }
    // Both missing are named together; the keys service is asked as the minter reading that one API.
    await expectReason(
      client.createSession({ ...body, scopes: ["keys:reroll"], caller: root(minter[0]!) }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
      { message: "The root key lacks the permissions 'api.api_1.create_key', 'api.api_1.encrypt_key'." },
    );
    expect(keys.calls.at(-1)).toEqual({ rpc: "getApi", permissions: ["api.api_1.read_api"] });
    expect(deps.store.sessions.size).toBe(0);

    const forApi = await client.createSession({
      ...body,
      scopes: ["keys:reroll"],
      caller: root(...minter, "api.api_1.encrypt_key"),
    });
    const forAll = await client.createSession({
      ...body,
      scopes: ["keys:create"],
      caller: root(...minter, "api.*.encrypt_key"),
    });
    expect(deps.store.sessions.get(forApi.sessionId)?.encryptKey).toBe(true);
    expect(deps.store.sessions.get(forAll.sessionId)?.encryptKey).toBe(true);

    // A session that makes no key needs no encrypt_key and carries none: reading, or a preview.
    const calls = keys.calls.length;
    const reader = await client.createSession({
      ...body,
      scopes: ["keys:read"],
      caller: root(...minter, "api.api_1.read_api", "api.api_1.encrypt_key"),
    });
    expect(keys.calls.length).toBe(calls);
    const preview = await client.createSession({
      ...body,
      scopes: ["keys:reroll", "keys:create"],
      preview: true,
      caller: root(...minter),
    });
    expect(deps.store.sessions.get(reader.sessionId)?.encryptKey).toBe(false);
    expect(deps.store.sessions.get(preview.sessionId)?.encryptKey).toBe(false);
  });

  it("over an API holding no recoverable key, neither asks encrypt_key nor gives it, even to a minter holding it", async () => {
    const { client, deps, portal } = await harness({
      keys: fakeKeys({ holdsRecoverableKeys: false }).transport,
    });
    const body = { portal: portal.id, externalId: "u", scopes: ["keys:reroll", "keys:create"] };
    const without = await client.createSession({
      ...body,
      caller: root("portal.*.create_portal_session", "api.api_1.create_key"),
    });
    const holding = await client.createSession({ ...body, caller: root("*") });
    expect(deps.store.sessions.get(without.sessionId)?.encryptKey).toBe(false);
    expect(deps.store.sessions.get(holding.sessionId)?.encryptKey).toBe(false);
  });
  it("keeps the rbac permissions a reroll copies grants with, for a keys:reroll session only, never asking for them", async () => {
    const { client, deps, portal } = await harness({
      keys: fakeKeys({ holdsRecoverableKeys: false }).transport,
    });
    const body = { portal: portal.id, externalId: "u" };
    const rbac = ["rbac.*.add_role_to_key", "rbac.*.add_permission_to_key"];
    const minter = ["portal.*.create_portal_session", "api.api_1.create_key", "api.api_1.read_key"];
    const mint = async (scopes: string[], permissions: string[], preview = false) => {
      const { sessionId } = await client.createSession({
        ...body,
        scopes,
        preview,
        caller: root(...permissions),
      });
      return deps.store.sessions.get(sessionId)?.rbacPermissions;
    };
    // Not asked at mint: a minter holding neither makes a reroll session that keeps none.
    expect(await mint(["keys:reroll"], minter)).toEqual([]);
    expect(await mint(["keys:reroll"], [...minter, ...rbac])).toEqual(rbac);
    expect(await mint(["keys:reroll"], [...minter, "rbac.*.add_permission_to_key"])).toEqual([
      "rbac.*.add_permission_to_key",
    ]);
    expect(await mint(["keys:reroll"], [...minter, "rbac.*.*"])).toEqual(rbac);
    // A session that rerolls nothing keeps none, even of a minter holding them: creating, or a preview.
    expect(await mint(["keys:create"], [...minter, ...rbac])).toEqual([]);
    expect(await mint(["keys:reroll"], [...minter, ...rbac], true)).toEqual([]);
  });
});
