import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRootKey } from "@latchkey/keys";
import { Unkey } from "@unkey/api";
import {
  ForbiddenErrorResponse,
  NotFoundErrorResponse,
  UnauthorizedErrorResponse,
} from "@unkey/api/models/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  analyticsOptions,
  holdToContract,
  type Proc,
  type Stack,
  startProcess,
  startStack,
} from "./testing/process-stack.ts";

// Unkey's own TypeScript SDK (2.5.1), unchanged, through its portal.* calls: the root key mints a
// session, the code is exchanged, and the session (the SDK's portalSession security, sent as the
// portal_session cookie) lists, rerolls and reads the verifications of its own user's keys only.
// Once against the gateway and the services as separate processes on real PostgreSQL, NATS and
// ClickHouse, once against `npm start` with no configuration at all.

interface Target {
  url: string;
  rootKey: string;
}

/** A Latchkey addition the SDK has no method for (portals.*), over plain HTTP, held to docs/openapi.json. */
async function post(target: Target, operation: string, body: unknown) {
  const res = await fetch(`${target.url}/v2/${operation}`, {
    method: "POST",
    headers: { authorization: `Bearer ${target.rootKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = { status: res.status, body: (await res.json()) as any };
  holdToContract(operation, answer.status, answer.body);
  return answer;
}

/** The flow every target runs; `verifications` says whether they reach analytics within the test. */
function portalFlow(name: string, target: () => Target, verifications: boolean) {
  const sdk = () =>
    new Unkey({ rootKey: target().rootKey, serverURL: target().url, retryConfig: { strategy: "none" } });

  it(`${name}: mints a session, exchanges its code, and the session sees and rerolls its user's keys only`, async () => {
    const unkey = sdk();
    const { data: api } = await unkey.apis.createApi({ name: `portal-sdk-${name}` });
    const mine = await unkey.keys.createKey({ apiId: api.apiId, externalId: "portal_user_a", name: "mine" });
    const also = await unkey.keys.createKey({ apiId: api.apiId, externalId: "portal_user_a" });
    const theirs = await unkey.keys.createKey({ apiId: api.apiId, externalId: "portal_user_b" });
    const portal = await post(target(), "portals.createPortal", {
      apiId: api.apiId,
      name: "Acme customers",
      slug: `acme-${name}`,
      branding: { title: "Acme API keys", accentColor: "#4f46e5" },
    });
    expect(portal.status).toBe(200);

    // The SDK answers these two with the response's headers beside the body: Cache-Control is no-store.
    const minted = await unkey.portal.createSession({
      portal: `acme-${name}`,
      externalId: "portal_user_a",
      scopes: ["keys:read", "keys:reroll", "analytics:read"],
      returnUrl: "https://app.example.com/settings",
    });
    expect(minted.headers["cache-control"]).toEqual(["no-store"]);
    const session = minted.result.data;
    expect(session.id).toMatch(/^ps_/);
    const url = new URL(session.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${target().url}/portal/`);
    const code = url.searchParams.get("code")!;

    const exchange = await unkey.portal.exchangeCode({ code });
    const exchanged = exchange.result.data;
    expect(exchange.headers["set-cookie"]?.[0]).toMatch(
      /^portal_session=pat_[\w-]+; Max-Age=86400; Path=\/; HttpOnly; SameSite=Strict$/,
    );
    expect(exchanged.accessToken).toMatch(/^pat_/);
    expect(exchanged.expiresAt).toBeGreaterThan(Date.now() + 86_400_000 - 60_000);
    const security = { portalSession: exchanged.accessToken };
    // A code is redeemed once.
    const again = await unkey.portal.exchangeCode({ code }).catch((err: unknown) => err);
    expect(again).toBeInstanceOf(UnauthorizedErrorResponse);

    const page = await unkey.portal.listKeys(security, {});
    expect(page.result.data.map((k) => k.keyId).sort()).toEqual([mine.data.keyId, also.data.keyId].sort());
    expect(page.result.data.find((k) => k.keyId === mine.data.keyId)?.identity?.externalId).toBe(
      "portal_user_a",
    );

    const { data: rerolled } = await unkey.portal.rerollKey(security, {
      keyId: mine.data.keyId,
      expiration: 0,
    });
    expect(rerolled.keyId).not.toBe(mine.data.keyId);
    expect((await unkey.keys.verifyKey({ key: rerolled.key })).data.valid).toBe(true);
    expect((await unkey.keys.verifyKey({ key: mine.data.key })).data.valid).toBe(false);

    // Another user's key, and one that does not exist, answer the same 404.
    const other = await unkey.portal
      .rerollKey(security, { keyId: theirs.data.keyId, expiration: 0 })
      .catch((err: unknown) => err);
    const missing = await unkey.portal
      .rerollKey(security, { keyId: "key_doesNotExist000", expiration: 0 })
      .catch((err: unknown) => err);
    expect(other).toBeInstanceOf(NotFoundErrorResponse);
    expect(missing).toBeInstanceOf(NotFoundErrorResponse);
    expect((other as NotFoundErrorResponse).data$.error.type).toBe(
      (missing as NotFoundErrorResponse).data$.error.type,
    );
    expect((await unkey.keys.verifyKey({ key: theirs.data.key })).data.valid).toBe(true);

    const end = Date.now() + 3_600_000;
    const start = end - 6 * 3_600_000;
    const series = async () =>
      (await unkey.portal.getVerifications(security, { startTime: start, endTime: end })).data;
    const first = await series();
    expect(first.length).toBe(7);
    expect(first.every((p) => p.total >= 0 && p.time >= start - 3_600_000)).toBe(true);
    if (verifications) {
      // The reroll's new key was verified once above (VALID), the old one once (its outcome a refusal);
      // the other user's verification is not the session's.
      const deadline = Date.now() + 30_000;
      let total = 0;
      while (total < 2 && Date.now() < deadline) {
        total = (await series()).reduce((n, p) => n + p.total, 0);
        if (total < 2) await new Promise((r) => setTimeout(r, 250));
      }
      const points = await series();
      expect(points.reduce((n, p) => n + p.total, 0)).toBe(2);
      expect(points.reduce((n, p) => n + p.valid, 0)).toBe(1);
    }

    // The root key revokes the session: its cookie stops working at once.
    expect((await post(target(), "portals.revokeSession", { sessionId: session.id })).status).toBe(200);
    const revoked = await unkey.portal.listKeys(security, {}).catch((err: unknown) => err);
    expect(revoked).toBeInstanceOf(UnauthorizedErrorResponse);
  });

  it(`${name}: refuses a scope the session lacks (403) and a root key that may not mint (404)`, async () => {
    const unkey = sdk();
    const { data: api } = await unkey.apis.createApi({ name: `portal-sdk-scopes-${name}` });
    const { data: key } = await unkey.keys.createKey({ apiId: api.apiId, externalId: "portal_user_c" });
    const portal = (await post(target(), "portals.createPortal", { apiId: api.apiId, name: "Scopes" })).body
      .data;
    const session = (
      await unkey.portal.createSession({
        portal: portal.portalId,
        externalId: "portal_user_c",
        scopes: ["keys:read"],
      })
    ).result.data;
    const code = new URL(session.url).searchParams.get("code")!;
    const exchanged = (await unkey.portal.exchangeCode({ code })).result.data;
    const refused = await unkey.portal
      .rerollKey({ portalSession: exchanged.accessToken }, { keyId: key.keyId, expiration: 0 })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ForbiddenErrorResponse);

    const missing = await unkey.portal
      .createSession({ portal: "portal_doesNotExist00", externalId: "u", scopes: ["keys:read"] })
      .catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(NotFoundErrorResponse);
  });
}

describe("Unkey's SDK portal.* against the separate-process stack", () => {
  let stack: Stack;
  const analytics = analyticsOptions("portal_sdk");
  beforeAll(async () => {
    // An encryption key, so that keys may be recoverable (the encrypt_key test).
    stack = await startStack({
      ...analytics.options,
      portal: true,
      env: { keys: { LATCHKEY_ENCRYPTION_KEY: randomBytes(32).toString("base64") } },
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await analytics.drop();
  });
  portalFlow("processes", () => ({ url: stack.gateway.url, rootKey: stack.rootKey }), true);

  it("processes: a reroll session over recoverable keys needs a minter holding encrypt_key, and rerolls them recoverable", async () => {
    const target = { url: stack.gateway.url, rootKey: stack.rootKey };
    const unkey = new Unkey({
      rootKey: stack.rootKey,
      serverURL: target.url,
      retryConfig: { strategy: "none" },
    });
    const { data: api } = await unkey.apis.createApi({ name: "portal-sdk-recoverable" });
    const { data: sealed } = await unkey.keys.createKey({
      apiId: api.apiId,
      externalId: "portal_user_r",
      recoverable: true,
    });
    const portal = (await post(target, "portals.createPortal", { apiId: api.apiId, name: "Recoverable" }))
      .body.data;
    const minter = [`portal.${portal.portalId}.create_portal_session`, `api.${api.apiId}.create_key`];
    const lacking = await createRootKey(stack.db.sql, { permissions: minter, name: "portal minter" });
    const holding = await createRootKey(stack.db.sql, {
      permissions: [...minter, `api.${api.apiId}.encrypt_key`],
      name: "portal minter with encrypt_key",
    });
    const body = { portal: portal.portalId, externalId: "portal_user_r", scopes: ["keys:reroll"] };

    const refused = await post({ ...target, rootKey: lacking.rootKey }, "portal.createSession", body);
    expect([refused.status, refused.body.error.type, refused.body.error.detail]).toEqual([
      403,
      "https://unkey.com/docs/errors/unkey/authorization/insufficient_permissions",
      `The root key lacks the permission 'api.${api.apiId}.encrypt_key'.`,
    ]);

    const minted = await post({ ...target, rootKey: holding.rootKey }, "portal.createSession", body);
    expect(minted.status).toBe(200);
    const code = new URL(minted.body.data.url).searchParams.get("code")!;
    const security = { portalSession: (await unkey.portal.exchangeCode({ code })).result.data.accessToken };
    const { data: rerolled } = await unkey.portal.rerollKey(security, { keyId: sealed.keyId, expiration: 0 });
    expect((await unkey.keys.verifyKey({ key: rerolled.key })).data.valid).toBe(true);
    expect((await unkey.keys.verifyKey({ key: sealed.key })).data.valid).toBe(false);
    const { data: read } = await unkey.keys.getKey({ keyId: rerolled.keyId, decrypt: true });
    expect(read.plaintext).toBe(rerolled.key);
  });
});

describe("Unkey's SDK portal.* against npm start with no configuration", () => {
  let proc: Proc;
  let rootKey = "";
  const dataDir = mkdtempSync(join(tmpdir(), "latchkey-portal-"));
  beforeAll(async () => {
    // The embedded PostgreSQL boots in seconds, but in far more on a loaded machine: startProcess waits this long.
    process.env["E2E_READY_TIMEOUT_MS"] ||= "90000";
    proc = await startProcess("latchkey", "apps/latchkey/src/start.ts", {
      DATA_DIR: dataDir,
      DATABASE_URL: "",
      NATS_URL: "",
      CLICKHOUSE_URL: "",
      CONSOLE: "false",
      METRICS_PORT: "0",
    });
    const deadline = Date.now() + 20_000;
    while (!/Root key \(holds \*\): (\S+)/.test(proc.output()) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    rootKey = /Root key \(holds \*\): (\S+)/.exec(proc.output())?.[1] ?? "";
    expect(rootKey).toMatch(/^lk_root_/);
  }, 120_000);
  afterAll(async () => {
    await proc?.stop();
    rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 });
  });
  // In one process verifications reach the embedded analytics after a buffered write: the same count is asked for.
  portalFlow("start", () => ({ url: proc.url, rootKey }), true);
});
