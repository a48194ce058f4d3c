import { verification } from "@latchkey/analytics/testing/analytics-store.suite";
import { EXCHANGE_BURST, type Exchange } from "@latchkey/gateway";
import { hashKey } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { inMemoryStack } from "../testing/in-memory-stack.ts";

interface Sent {
  key?: string | null;
  cookie?: string;
  origin?: string;
  secFetchSite?: string;
  host?: string;
  forwardedHost?: string;
  forwardedProto?: string;
}

/** The gateway over the real portal, keys and analytics services, in memory, one workspace per stack. */
function portalStack(name: string, options: Parameters<typeof inMemoryStack>[1] = {}) {
  const stack = inMemoryStack(name, options);
  const { gateway, keysDeps } = stack;
  const rootKeyOf = (id: string, workspaceId: string, permissions: string[]) => {
    const key = `lk_root_${id}_0123456789abcdef`;
    keysDeps.store.putRootKey({
      id: `rk_${id}`,
      workspaceId,
      permissions,
      revokedAt: null,
      hash: hashKey(key),
    });
    return key;
  };
  const post = async (operation: string, body: unknown, sent: Sent = {}) => {
    const headers: Record<string, string> = {};
    let status = 0;
    let text = "";
    const key = sent.key === undefined ? stack.rootKey : sent.key;
    const fields: Record<string, string | undefined> = {
      cookie: sent.cookie,
      origin: sent.origin,
      "sec-fetch-site": sent.secFetchSite,
      host: sent.host ?? "keys.example.com",
      "x-forwarded-host": sent.forwardedHost,
      "x-forwarded-proto": sent.forwardedProto,
    };
    await new Promise<void>((resolve) => {
      const x: Exchange = {
        method: "POST",
        url: `/v2/${operation}`,
        authorization: key === null ? undefined : `Bearer ${key}`,
        accept: undefined,
        header: (name) => fields[name],
        reply(s, _type, b, h) {
          status = s;
          text = b;
          Object.assign(headers, h ?? {});
          resolve();
        },
      };
      gateway.exchange(x, Buffer.from(JSON.stringify(body)));
    });
    return { status, body: JSON.parse(text), headers };
  };
  /** An API, a portal over it, and keys of two end users (user_a twice, user_b once) and one with no owner. */
  const seed = async (portalFields: Record<string, unknown> = {}) => {
    const apiId = (await post("apis.createApi", { name: `${name}-api` })).body.data.apiId as string;
    const portal = await post("portals.createPortal", { apiId, name: "Acme", ...portalFields });
    expect(portal.status).toBe(200);
    const key = async (externalId?: string) =>
      (await post("keys.createKey", { apiId, ...(externalId ? { externalId } : {}) })).body.data
        .keyId as string;
    return {
      apiId,
      portalId: portal.body.data.portalId as string,
      a1: await key("user_a"),
      a2: await key("user_a"),
      b1: await key("user_b"),
      none: await key(),
    };
  };
  /** createSession then exchangeCode: the session's cookie and its answers. */
  const session = async (
    portal: string,
    externalId: string,
    scopes: string[],
    extra: Record<string, unknown> = {},
  ) => {
    const created = await post("portal.createSession", { portal, externalId, scopes, ...extra });
    expect(created.status).toBe(200);
    const code = new URL(created.body.data.url).searchParams.get("code")!;
    const exchanged = await post("portal.exchangeCode", { code }, { key: null });
    expect(exchanged.status).toBe(200);
    return {
      id: created.body.data.id as string,
      token: exchanged.body.data.accessToken as string,
      cookie: `portal_session=${exchanged.body.data.accessToken}`,
      created,
      exchanged,
    };
  };
  return { ...stack, post, seed, session, rootKeyOf };
}

describe("the portal through the gateway over the real services, in memory", () => {
  it("runs Unkey's flow: createSession, exchangeCode sets the cookie, then the user's own keys only", async () => {
    const { post, seed, session } = portalStack("portal_flow");
    const { portalId, a1, a2, b1 } = await seed();
    const s = await session(portalId, "user_a", ["keys:read", "keys:reroll"], {
      returnUrl: "https://app.example.com/settings",
    });
    expect(s.created.body.data.url).toMatch(
      /^http:\/\/keys\.example\.com\/portal\/\?code=pst_[A-Za-z0-9_-]{43}$/,
    );
    expect(s.created.body.data.id).toMatch(/^ps_/);
    expect(s.created.headers["cache-control"]).toBe("no-store");
    expect(s.exchanged.headers["cache-control"]).toBe("no-store");
    expect(s.exchanged.headers["set-cookie"]).toBe(
      `portal_session=${s.token}; Max-Age=86400; Path=/; HttpOnly; SameSite=Strict`,
    );
    expect(s.exchanged.body.data.expiresAt).toBe(Date.UTC(2026, 0, 1) + 86_400_000);

    const listed = await post("portal.listKeys", {}, { key: null, cookie: s.cookie });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((k: { keyId: string }) => k.keyId).sort()).toEqual([a1, a2].sort());
    expect(listed.body.pagination).toEqual({ hasMore: false });

    const me = await post("portal.getSession", {}, { key: null, cookie: `other=1; ${s.cookie}` });
    expect(me.status).toBe(200);
    expect(me.body.data).toEqual({
      sessionId: s.id,
      portal: { portalId, name: "Acme", branding: {} },
      externalId: "user_a",
      scopes: ["keys:read", "keys:reroll"],
      returnUrl: "https://app.example.com/settings",
      expiresAt: Date.UTC(2026, 0, 1) + 86_400_000,
      preview: false,
    });

    const rerolled = await post(
      "portal.rerollKey",
      { keyId: a1, expiration: 0 },
      { key: null, cookie: s.cookie },
    );
    expect(rerolled.status).toBe(200);
    expect(rerolled.body.data.key).toMatch(/.{20,}/);
    // The new key is the user's too, and the old one stopped at once.
    const after = await post("portal.listKeys", {}, { key: null, cookie: s.cookie });
    expect(after.body.data.map((k: { keyId: string }) => k.keyId)).toContain(rerolled.body.data.keyId);
    expect((await post("keys.verifyKey", { key: rerolled.body.data.key })).body.data.valid).toBe(true);

    // Another user's key is a missing key, word for word.
    const theirs = await post(
      "portal.rerollKey",
      { keyId: b1, expiration: 0 },
      { key: null, cookie: s.cookie },
    );
    const missing = await post(
      "portal.rerollKey",
      { keyId: "key_doesnotexist12345", expiration: 0 },
      { key: null, cookie: s.cookie },
    );
    expect(theirs.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(theirs.body.error.type).toBe(missing.body.error.type);
    expect(theirs.body.error.detail).toBe(`The key '${b1}' does not exist.`);
    expect(missing.body.error.detail).toBe("The key 'key_doesnotexist12345' does not exist.");
  });

  it("answers 404 for a key of another API or with no owner, exactly as for a missing one", async () => {
    const { post, seed, session } = portalStack("portal_other_api");
    const { portalId, none } = await seed();
    const otherApi = (await post("apis.createApi", { name: "other" })).body.data.apiId;
    const elsewhere = (await post("keys.createKey", { apiId: otherApi, externalId: "user_a" })).body.data
      .keyId;
    const s = await session(portalId, "user_a", ["keys:read", "keys:reroll", "analytics:read"]);
    for (const keyId of [elsewhere, none]) {
      const res = await post("portal.rerollKey", { keyId, expiration: 0 }, { key: null, cookie: s.cookie });
      expect([res.status, res.body.error.detail]).toEqual([404, `The key '${keyId}' does not exist.`]);
      const v = await post(
        "portal.getVerifications",
        { startTime: Date.UTC(2026, 0, 1), endTime: Date.UTC(2026, 0, 1, 2), keyId },
        { key: null, cookie: s.cookie },
      );
      expect(v.status).toBe(404);
    }
  });

  it("refuses a scope the session was not granted with 403, and a preview session's changes with 403", async () => {
    const { post, seed, session } = portalStack("portal_scopes");
    const { portalId, a1 } = await seed();
    const reader = await session(portalId, "user_a", ["keys:read"]);
    const reroll = await post(
      "portal.rerollKey",
      { keyId: a1, expiration: 0 },
      { key: null, cookie: reader.cookie },
    );
    expect([reroll.status, reroll.body.error.detail]).toEqual([
      403,
      "The portal session was not granted the scope 'keys:reroll'.",
    ]);
    expect((await post("portal.createKey", {}, { key: null, cookie: reader.cookie })).status).toBe(403);
    expect(
      (
        await post(
          "portal.getVerifications",
          { startTime: 0, endTime: 3_600_000 },
          { key: null, cookie: reader.cookie },
        )
      ).status,
    ).toBe(403);
    const roller = await session(portalId, "user_a", ["keys:reroll"]);
    expect((await post("portal.listKeys", {}, { key: null, cookie: roller.cookie })).status).toBe(403);
    const preview = await session(portalId, "user_a", ["keys:read", "keys:create"], { preview: true });
    expect((await post("portal.listKeys", {}, { key: null, cookie: preview.cookie })).status).toBe(200);
    expect((await post("portal.createKey", {}, { key: null, cookie: preview.cookie })).status).toBe(403);
  });

  it("creates a key for the user with keys:create, linked to its externalId", async () => {
    const { post, seed, session } = portalStack("portal_create");
    const { portalId, a1, a2 } = await seed();
    const s = await session(portalId, "user_a", ["keys:read", "keys:create"]);
    const made = await post("portal.createKey", { name: "CI" }, { key: null, cookie: s.cookie });
    expect(made.status).toBe(200);
    const got = await post("keys.getKey", { keyId: made.body.data.keyId });
    expect(got.body.data.identity.externalId).toBe("user_a");
    expect(got.body.data.name).toBe("CI");
    const listed = await post("portal.listKeys", {}, { key: null, cookie: s.cookie });
    expect(listed.body.data.map((k: { keyId: string }) => k.keyId).sort()).toEqual(
      [a1, a2, made.body.data.keyId].sort(),
    );
    // A user with no key yet gets one too; its identity is made.
    const fresh = await session(portalId, "user_new", ["keys:read", "keys:create"]);
    expect((await post("portal.listKeys", {}, { key: null, cookie: fresh.cookie })).body.data).toEqual([]);
    expect((await post("portal.createKey", {}, { key: null, cookie: fresh.cookie })).status).toBe(200);
    expect((await post("portal.listKeys", {}, { key: null, cookie: fresh.cookie })).body.data).toHaveLength(
      1,
    );
  });

  it("redeems a code once and within 60 s; a wrong code is 401", async () => {
    const { post, seed, clock } = portalStack("portal_codes");
    const { portalId } = await seed();
    const codeOf = async () =>
      new URL(
        (await post("portal.createSession", { portal: portalId, externalId: "u", scopes: ["keys:read"] }))
          .body.data.url,
      ).searchParams.get("code")!;
    const code = await codeOf();
    expect((await post("portal.exchangeCode", { code }, { key: null })).status).toBe(200);
    const again = await post("portal.exchangeCode", { code }, { key: null });
    expect([again.status, again.body.error.detail]).toEqual([
      401,
      "The code is invalid, expired or already redeemed; ask the application for a new portal link.",
    ]);
    const late = await codeOf();
    clock.advance(60_000);
    expect((await post("portal.exchangeCode", { code: late }, { key: null })).status).toBe(401);
    const inTime = await codeOf();
    clock.advance(59_999);
    expect((await post("portal.exchangeCode", { code: inTime }, { key: null })).status).toBe(200);
    expect((await post("portal.exchangeCode", { code: "pst_guess" }, { key: null })).status).toBe(401);
  });

  it("answers 401 once a session expires (24 h, or the portal's shorter sessionTtlMs), is revoked or ended", async () => {
    const { post, seed, session, clock } = portalStack("portal_expiry");
    const { portalId } = await seed();
    const day = await session(portalId, "user_a", ["keys:read"]);
    clock.advance(86_400_000 - 1);
    expect((await post("portal.listKeys", {}, { key: null, cookie: day.cookie })).status).toBe(200);
    clock.advance(1);
    const expired = await post("portal.listKeys", {}, { key: null, cookie: day.cookie });
    expect([expired.status, expired.body.error.detail]).toEqual([
      401,
      "The portal session is unknown, expired or revoked; open the portal again from the application.",
    ]);

    const short = await post("portals.createPortal", {
      apiId: (await post("apis.createApi", { name: "short" })).body.data.apiId,
      name: "Short",
      sessionTtlMs: 600_000,
    });
    const brief = await session(short.body.data.portalId, "user_a", ["keys:read"]);
    expect(brief.exchanged.headers["set-cookie"]).toContain("Max-Age=600;");
    clock.advance(600_000);
    expect((await post("portal.listKeys", {}, { key: null, cookie: brief.cookie })).status).toBe(401);

    const revoked = await session(portalId, "user_a", ["keys:read"]);
    expect((await post("portals.revokeSession", { sessionId: revoked.id })).status).toBe(200);
    expect((await post("portal.listKeys", {}, { key: null, cookie: revoked.cookie })).status).toBe(401);

    const ended = await session(portalId, "user_a", ["keys:read"]);
    const end = await post("portal.endSession", {}, { key: null, cookie: ended.cookie });
    expect(end.status).toBe(200);
    expect(end.headers["set-cookie"]).toBe("portal_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict");
    expect((await post("portal.getSession", {}, { key: null, cookie: ended.cookie })).status).toBe(401);

    // Deleting the portal ends its sessions.
    const gone = await session(portalId, "user_a", ["keys:read"]);
    expect((await post("portals.deletePortal", { portalId })).status).toBe(200);
    expect((await post("portal.listKeys", {}, { key: null, cookie: gone.cookie })).status).toBe(401);
    expect((await post("portal.listKeys", {}, { key: null })).status).toBe(401);
  });

  it("refuses a cross-origin state-changing call with 403, and takes same-origin and non-browser ones", async () => {
    const { post, seed, session } = portalStack("portal_csrf");
    const { portalId, a1 } = await seed();
    const s = await session(portalId, "user_a", ["keys:read", "keys:reroll", "keys:create"]);
    const as = (sent: Sent) => ({ key: null, cookie: s.cookie, ...sent });
    for (const sent of [
      { origin: "https://evil.example" },
      { origin: "null" },
      { origin: "http://keys.example.com.evil.example" },
      { secFetchSite: "cross-site" },
      { secFetchSite: "same-site" },
      // Sec-Fetch-Site speaks first: a browser that sends it says where the request came from.
      { secFetchSite: "cross-site", origin: "http://keys.example.com" },
    ]) {
      for (const [op, body] of [
        ["portal.rerollKey", { keyId: a1, expiration: 0 }],
        ["portal.createKey", {}],
        ["portal.endSession", {}],
      ] as const) {
        const res = await post(op, body, as(sent));
        expect([op, res.status, res.body.error.detail]).toEqual([
          op,
          403,
          "A state-changing portal call must come from the portal's own origin: its Origin (or Sec-Fetch-Site: same-origin) must name this deployment's public URL.",
        ]);
      }
    }
    // Reads are not refused: a cross-site read cannot see the answer without CORS, which is never sent.
    const read = await post("portal.listKeys", {}, as({ origin: "https://evil.example" }));
    expect(read.status).toBe(200);
    expect(Object.keys(read.headers).filter((h) => h.startsWith("access-control"))).toEqual([]);
    expect((await post("portal.createKey", {}, as({ origin: "http://keys.example.com" }))).status).toBe(200);
    expect((await post("portal.createKey", {}, as({ secFetchSite: "same-origin" }))).status).toBe(200);
    // Neither header: no browser made it (a backend with Unkey's SDK), so nothing was forged.
    expect((await post("portal.createKey", {}, as({}))).status).toBe(200);
  });

  it("builds the portal URL from PUBLIC_URL, sets Secure under https, and checks Origin against it", async () => {
    const { post, seed, session } = portalStack("portal_public_url", {
      publicUrl: "https://keys.acme.example/lk/",
    });
    const { portalId } = await seed();
    const s = await session(portalId, "user_a", ["keys:create"]);
    expect(s.created.body.data.url).toMatch(/^https:\/\/keys\.acme\.example\/lk\/portal\/\?code=pst_/);
    expect(s.exchanged.headers["set-cookie"]).toMatch(/; Secure$/);
    const as = (origin: string) => ({ key: null, cookie: s.cookie, origin });
    expect((await post("portal.createKey", {}, as("http://keys.example.com"))).status).toBe(403);
    expect((await post("portal.createKey", {}, as("https://keys.acme.example"))).status).toBe(200);
  });

  it("believes X-Forwarded-Host and -Proto only from a trusted proxy", async () => {
    const { post, seed } = portalStack("portal_forwarded");
    const { portalId } = await seed();
    // In process there is no peer, so no proxy is trusted: the Host field stands.
    const res = await post(
      "portal.createSession",
      { portal: portalId, externalId: "u", scopes: ["keys:read"] },
      { forwardedHost: "evil.example", forwardedProto: "https" },
    );
    expect(res.body.data.url).toMatch(/^http:\/\/keys\.example\.com\/portal\//);
  });

  it("answers 404 to a root key that may not mint for the portal, 403 for a scope it cannot grant", async () => {
    const { post, seed, rootKeyOf } = portalStack("portal_mint");
    const { portalId, apiId } = await seed({ slug: "acme" });
    const ws = "ws_portal_mint";
    const body = { portal: portalId, externalId: "u", scopes: ["keys:read"] };
    const none = rootKeyOf("mint_none", ws, ["api.*.read_key", "api.*.read_api"]);
    const missing = await post("portal.createSession", { ...body, portal: "portal_doesnotexist1" });
    const hidden = await post("portal.createSession", body, { key: none });
    expect([hidden.status, missing.status]).toEqual([404, 404]);
    expect(hidden.body.error.type).toBe(missing.body.error.type);
    expect(hidden.body.error.detail).toBe(`The portal '${portalId}' does not exist.`);

    const minter = rootKeyOf("mint_only", ws, [`portal.${portalId}.create_portal_session`]);
    const lacking = await post("portal.createSession", body, { key: minter });
    expect([lacking.status, lacking.body.error.detail]).toEqual([
      403,
      `The root key lacks the permissions 'api.${apiId}.read_key', 'api.${apiId}.read_api'.`,
    ]);
    const reader = rootKeyOf("mint_read", ws, [
      "portal.*.create_portal_session",
      `api.${apiId}.read_key`,
      `api.${apiId}.read_api`,
    ]);
    expect((await post("portal.createSession", body, { key: reader })).status).toBe(200);
    expect((await post("portal.createSession", { ...body, portal: "acme" }, { key: reader })).status).toBe(
      200,
    );
    const reroll = await post("portal.createSession", { ...body, scopes: ["keys:reroll"] }, { key: reader });
    expect([reroll.status, reroll.body.error.detail]).toEqual([
      403,
      `The root key lacks the permission 'api.${apiId}.create_key'.`,
    ]);
    // Another workspace's root key cannot find the portal, by id or slug.
    const stranger = rootKeyOf("mint_stranger", "ws_elsewhere", ["*"]);
    expect((await post("portal.createSession", body, { key: stranger })).status).toBe(404);
    expect((await post("portal.createSession", { ...body, portal: "acme" }, { key: stranger })).status).toBe(
      404,
    );
  });

  it("asks encrypt_key of a root key minting a session that makes keys over an API holding recoverable keys", async () => {
    const { post, rootKeyOf } = portalStack("portal_sealed", { encryptionKey: Buffer.alloc(32, 7) });
    const ws = "ws_portal_sealed";
    const apiId = (await post("apis.createApi", { name: "sealed" })).body.data.apiId as string;
    const portalId = (await post("portals.createPortal", { apiId, name: "Sealed" })).body.data
      .portalId as string;
    const keyOf = async (fields: Record<string, unknown>) =>
      (await post("keys.createKey", { apiId, externalId: "user_a", ...fields })).body.data as {
        keyId: string;
        key: string;
      };
    const plain = await keyOf({});
    const mint = (key: string, scopes: string[]) =>
      post("portal.createSession", { portal: portalId, externalId: "user_a", scopes }, { key });
    const minter = [`portal.${portalId}.create_portal_session`, `api.${apiId}.create_key`];
    const lacking = rootKeyOf("sealed_lacking", ws, minter);
    const holding = rootKeyOf("sealed_holding", ws, [...minter, `api.${apiId}.encrypt_key`]);

    // Minted while the API holds no recoverable key: no encrypt_key asked, none carried.
    const early = await mint(lacking, ["keys:reroll"]);
    expect(early.status).toBe(200);
    const earlyCode = new URL(early.body.data.url).searchParams.get("code")!;
    const earlyCookie = `portal_session=${(await post("portal.exchangeCode", { code: earlyCode }, { key: null })).body.data.accessToken}`;

    const sealed = await keyOf({ recoverable: true });
    for (const scopes of [["keys:reroll"], ["keys:create"]]) {
      const refused = await mint(lacking, scopes);
      expect([refused.status, refused.body.error.type, refused.body.error.detail]).toEqual([
        403,
        "https://unkey.com/docs/errors/unkey/authorization/insufficient_permissions",
        `The root key lacks the permission 'api.${apiId}.encrypt_key'.`,
      ]);
    }
    // The earlier session cannot reroll the recoverable key, and the key still verifies.
    const stale = await post(
      "portal.rerollKey",
      { keyId: sealed.keyId, expiration: 0 },
      { key: null, cookie: earlyCookie },
    );
    expect([stale.status, stale.body.error.detail]).toEqual([
      403,
      `The key is recoverable, and this portal session may not reroll recoverable keys: it needs a session minted by a root key holding 'api.${apiId}.encrypt_key'.`,
    ]);
    expect((await post("keys.verifyKey", { key: sealed.key })).body.data.valid).toBe(true);

    const minted = await mint(holding, ["keys:reroll", "keys:create"]);
    expect(minted.status).toBe(200);
    const code = new URL(minted.body.data.url).searchParams.get("code")!;
    const cookie = `portal_session=${(await post("portal.exchangeCode", { code }, { key: null })).body.data.accessToken}`;
    const session = { key: null, cookie };
    const read = async (keyId: string) =>
      (await post("keys.getKey", { keyId, decrypt: true })).body.data as { plaintext?: string };

    const rerolled = await post("portal.rerollKey", { keyId: sealed.keyId, expiration: 0 }, session);
    expect(rerolled.status).toBe(200);
    expect((await post("keys.verifyKey", { key: rerolled.body.data.key })).body.data.valid).toBe(true);
    expect((await post("keys.verifyKey", { key: sealed.key })).body.data.valid).toBe(false);
    expect((await read(rerolled.body.data.keyId)).plaintext).toBe(rerolled.body.data.key);

    // A plain key of the same user rerolls plain; a created key is recoverable, as the API's keys are.
    const again = await post("portal.rerollKey", { keyId: plain.keyId, expiration: 0 }, session);
    expect(again.status).toBe(200);
    expect((await read(again.body.data.keyId)).plaintext).toBeUndefined();
    const created = await post("portal.createKey", { name: "new" }, session);
    expect(created.status).toBe(200);
    expect((await read(created.body.data.keyId)).plaintext).toBe(created.body.data.key);
  });

  it("rerolls a key holding a role and a permission only through a session whose minter held the rbac permissions copying them needs", async () => {
    const { post, rootKeyOf } = portalStack("portal_rbac");
    const ws = "ws_portal_rbac";
    const apiId = (await post("apis.createApi", { name: "rbac" })).body.data.apiId as string;
    const portalId = (await post("portals.createPortal", { apiId, name: "Rbac" })).body.data
      .portalId as string;
    expect(
      (await post("permissions.createRole", { name: "reader", permissions: ["documents.read"] })).status,
    ).toBe(200);
    const created = await post("keys.createKey", {
      apiId,
      externalId: "user_a",
      roles: ["reader"],
      permissions: ["billing.write"],
    });
    expect(created.status).toBe(200);
    const original = created.body.data as { keyId: string; key: string };
    // Only the role gives documents.read, only the direct permission billing.write.
    const query = "documents.read AND billing.write";
    const verify = async (key: string) =>
      (await post("keys.verifyKey", { key, permissions: query })).body.data as {
        code: string;
        roles: string[];
        permissions: string[];
      };
    expect((await verify(original.key)).code).toBe("VALID");

    const minter = [`portal.${portalId}.create_portal_session`, `api.${apiId}.create_key`];
    const cookieOf = async (key: string) => {
      const minted = await post(
        "portal.createSession",
        { portal: portalId, externalId: "user_a", scopes: ["keys:reroll"] },
        { key },
      );
      expect(minted.status).toBe(200);
      const code = new URL(minted.body.data.url).searchParams.get("code")!;
      return `portal_session=${(await post("portal.exchangeCode", { code }, { key: null })).body.data.accessToken}`;
    };

    // Minted without them (not asked at mint): 403 naming both, and the original still verifies.
    const lacking = await cookieOf(rootKeyOf("rbac_lacking", ws, minter));
    const refused = await post(
      "portal.rerollKey",
      { keyId: original.keyId, expiration: 0 },
      { key: null, cookie: lacking },
    );
    expect([refused.status, refused.body.error.type, refused.body.error.detail]).toEqual([
      403,
      "https://unkey.com/docs/errors/unkey/authorization/insufficient_permissions",
      "The key holds roles and permissions, and this portal session may not give them to a new key: it needs a session minted by a root key holding 'rbac.*.add_role_to_key' and 'rbac.*.add_permission_to_key'.",
    ]);
    expect((await verify(original.key)).code).toBe("VALID");

    // Minted with them: the new key holds the same role and permission, the original stops.
    const holding = await cookieOf(
      rootKeyOf("rbac_holding", ws, [...minter, "rbac.*.add_role_to_key", "rbac.*.add_permission_to_key"]),
    );
    const rerolled = await post(
      "portal.rerollKey",
      { keyId: original.keyId, expiration: 0 },
      { key: null, cookie: holding },
    );
    expect(rerolled.status).toBe(200);
    const verified = await verify(rerolled.body.data.key);
    expect(verified.code).toBe("VALID");
    expect(verified.roles).toEqual(["reader"]);
    expect([...verified.permissions].sort()).toEqual(["billing.write", "documents.read"]);
    expect((await verify(original.key)).code).toBe("EXPIRED");
  });

  it("bounds live sessions per workspace: one minting without end is refused 412, another workspace still mints", async () => {
    const { post, seed, rootKeyOf, clock } = portalStack("portal_fair", {
      portal: { maxLiveSessionsPerWorkspace: 25 },
    });
    const { portalId } = await seed();
    const body = { portal: portalId, externalId: "u", scopes: ["keys:read"] };
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await post("portal.createSession", body)).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(25);
    expect(statuses.slice(25)).toEqual(Array(15).fill(412));
    const refused = await post("portal.createSession", body);
    expect(refused.body.error.detail).toBe(
      "The workspace already has 25 live portal sessions, the most it may have; revoke some, or wait for them to expire.",
    );

    const other = rootKeyOf("fair_other", "ws_fair_other", ["*"]);
    const apiId = (await post("apis.createApi", { name: "theirs" }, { key: other })).body.data.apiId;
    const theirs = (await post("portals.createPortal", { apiId, name: "Theirs" }, { key: other })).body.data
      .portalId;
    const minted = await post("portal.createSession", { ...body, portal: theirs }, { key: other });
    expect(minted.status).toBe(200);
    // Codes never redeemed stop counting once they expire.
    clock.advance(60_000);
    expect((await post("portal.createSession", body)).status).toBe(200);
  });

  it("gives each client a budget of exchange attempts, then 429", async () => {
    const { post } = portalStack("portal_guess");
    const statuses: number[] = [];
    for (let i = 0; i < EXCHANGE_BURST + 3; i++) {
      statuses.push((await post("portal.exchangeCode", { code: `pst_guess_${i}` }, { key: null })).status);
    }
    expect(statuses).toEqual([...Array(EXCHANGE_BURST).fill(401), 429, 429, 429]);
  });

  it("answers Unkey's zero-filled series of the user's own verifications", async () => {
    const { post, seed, session, analyticsDeps } = portalStack("portal_analytics");
    const { portalId, apiId, a1, b1 } = await seed();
    const ws = "ws_portal_analytics";
    const t0 = Date.UTC(2026, 0, 1);
    await analyticsDeps.store.insertVerifications([
      verification({ workspaceId: ws, apiId, keyId: a1, externalId: "user_a", time: t0 + 60_000 }),
      verification({
        workspaceId: ws,
        apiId,
        keyId: a1,
        externalId: "user_a",
        time: t0 + 120_000,
        outcome: "RATE_LIMITED",
      }),
      verification({ workspaceId: ws, apiId, keyId: a1, externalId: "user_a", time: t0 + 2 * 3_600_000 }),
      verification({ workspaceId: ws, apiId, keyId: b1, externalId: "user_b", time: t0 + 60_000 }),
      verification({ workspaceId: "ws_other", apiId, keyId: a1, externalId: "user_a", time: t0 + 60_000 }),
    ]);
    const s = await session(portalId, "user_a", ["analytics:read"]);
    const res = await post(
      "portal.getVerifications",
      { startTime: t0, endTime: t0 + 3 * 3_600_000 },
      { key: null, cookie: s.cookie },
    );
    expect(res.status).toBe(200);
    const zero = { insufficientPermissions: 0, forbidden: 0, disabled: 0, expired: 0, usageExceeded: 0 };
    expect(res.body.data).toEqual([
      { time: t0, total: 2, valid: 1, rateLimited: 1, ...zero },
      { time: t0 + 3_600_000, total: 0, valid: 0, rateLimited: 0, ...zero },
      { time: t0 + 2 * 3_600_000, total: 1, valid: 1, rateLimited: 0, ...zero },
    ]);
    const long = await post(
      "portal.getVerifications",
      { startTime: t0, endTime: t0 + 91 * 86_400_000 },
      { key: null, cookie: s.cookie },
    );
    expect([long.status, long.body.error.detail]).toEqual([400, "The window may span at most 90 days."]);
    const days = await post(
      "portal.getVerifications",
      { startTime: t0, endTime: t0 + 10 * 86_400_000 },
      { key: null, cookie: s.cookie },
    );
    expect(days.body.data).toHaveLength(10);
    expect(days.body.data[0].total).toBe(3);
  });

  it("audits every change, session and exchange; the session is the actor of its own acts", async () => {
    const { post, seed, session } = portalStack("portal_audit");
    const { portalId, a1 } = await seed();
    const s = await session(portalId, "user_a", ["keys:reroll"]);
    await post("portal.rerollKey", { keyId: a1, expiration: 0 }, { key: null, cookie: s.cookie });
    await post("portals.revokeSession", { sessionId: s.id });
    await post("portals.updatePortal", { portalId, name: "Renamed" });
    const log = await post("auditLogs.list", { limit: 100 });
    const ours = log.body.data
      .filter((r: { operation: string }) => /^portals?\./.test(r.operation))
      .map((r: { operation: string; actor: { type: string; id: string } }) => [r.operation, r.actor.type])
      .sort();
    // One clock: the records share a time, so their order is the ids'.
    expect(ours).toEqual([
      ["portal.createSession", "root_key"],
      ["portal.exchangeCode", "portal_session"],
      ["portal.rerollKey", "portal_session"],
      ["portals.createPortal", "root_key"],
      ["portals.revokeSession", "root_key"],
      ["portals.updatePortal", "root_key"],
    ]);
  });
});
