import { analyticsRoutes, createMemoryAnalyticsDeps } from "@latchkey/analytics";
import { createGateway, listen } from "@latchkey/gateway";
import { createIdentityDeps, identityMigrations, identityRoutes } from "@latchkey/identity";
import { createKeysDeps, createWorkspace, keysMigrations, keysRoutes } from "@latchkey/keys";
import { createPortalDeps, portalMigrations, portalRoutes } from "@latchkey/portal";
import { createRatelimitDeps, ratelimitMigrations, ratelimitRoutes } from "@latchkey/ratelimit";
import { createLogger, localTransport, MemoryBus, migrate, systemClock } from "@latchkey/runtime";
import { createTestDatabase, type TestDatabase } from "@latchkey/runtime/testing/database";
import { createMemoryWebhookDeps, webhookRoutes } from "@latchkey/webhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The portal end to end in one process on a real PostgreSQL: the gateway's HTTP server over the real
 * keys, identity, ratelimit and portal services, as npm start composes them. The portal's bound on
 * live sessions is set low (5) so one workspace can reach it.
 */
let db: TestDatabase;
let server: Awaited<ReturnType<typeof listen>>;
let a: { workspaceId: string; rootKey: string };
let b: { workspaceId: string; rootKey: string };
let closeKeys: () => Promise<void>;
let closeRatelimit: () => Promise<void>;
const silent = (name: string) => createLogger(name, "silent");

type Json = any;

async function post(operation: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`http://127.0.0.1:${server.port}/v2/${operation}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json, headers: res.headers };
}

const as = (key: string) => ({ authorization: `Bearer ${key}` });

beforeAll(async () => {
  db = await createTestDatabase();
  for (const [name, migrations] of [
    ["keys", keysMigrations],
    ["identity", identityMigrations],
    ["ratelimit", ratelimitMigrations],
    ["portal", portalMigrations],
  ] as const) {
    await migrate(db.sql, name, migrations);
  }
  const bus = new MemoryBus();
  const identity = localTransport(
    identityRoutes(createIdentityDeps({ sql: db.sql, bus, log: silent("identity") })),
  );
  const ratelimitDeps = createRatelimitDeps({ sql: db.sql, bus, log: silent("ratelimit") });
  closeRatelimit = () => ratelimitDeps.close();
  const ratelimit = localTransport(ratelimitRoutes(ratelimitDeps));
  const keysDeps = createKeysDeps({ sql: db.sql, bus, log: silent("keys"), identity, ratelimit });
  closeKeys = () => keysDeps.close();
  const keys = localTransport(keysRoutes(keysDeps));
  const analytics = localTransport(analyticsRoutes(createMemoryAnalyticsDeps({ log: silent("analytics") })));
  const portal = createPortalDeps({
    sql: db.sql,
    keys,
    analytics,
    settings: { maxLiveSessionsPerWorkspace: 5 },
    log: silent("portal"),
  });
  const gateway = createGateway({
    keys,
    identity,
    ratelimit,
    analytics,
    webhooks: localTransport(webhookRoutes(createMemoryWebhookDeps({ log: silent("webhooks") }))),
    portal: localTransport(portalRoutes(portal)),
    log: silent("gateway"),
    clock: systemClock,
    bus,
    publicUrl: "https://keys.example.com",
  });
  server = await listen(gateway, 0, "127.0.0.1");
  a = await createWorkspace(db.sql, "portal-a");
  b = await createWorkspace(db.sql, "portal-b");
});

afterAll(async () => {
  await server?.close();
  await closeKeys?.();
  await closeRatelimit?.();
  await db?.drop();
});

/** An API of the workspace, a portal over it, and a key of user_a and one of user_b. */
async function seed(key: string) {
  const apiId = (await post("apis.createApi", { name: "portal-int" }, as(key))).body.data.apiId;
  const portalId = (await post("portals.createPortal", { apiId, name: "Acme" }, as(key))).body.data.portalId;
  const mine = (await post("keys.createKey", { apiId, externalId: "user_a" }, as(key))).body.data.keyId;
  const theirs = (await post("keys.createKey", { apiId, externalId: "user_b" }, as(key))).body.data.keyId;
  return { apiId, portalId, mine, theirs };
}

async function mint(key: string, portalId: string, scopes: string[]) {
  const res = await post("portal.createSession", { portal: portalId, externalId: "user_a", scopes }, as(key));
  return {
    status: res.status,
    id: res.body.data?.id,
    code: res.body.data && new URL(res.body.data.url).searchParams.get("code")!,
  };
}

describe("the portal on PostgreSQL, through the gateway's HTTP server", () => {
  it("runs the flow with the cookie a browser keeps, and audits each step in portal_audit_log", async () => {
    const { portalId, mine, theirs } = await seed(a.rootKey);
    const minted = await mint(a.rootKey, portalId, ["keys:read", "keys:reroll"]);
    const exchanged = await post("portal.exchangeCode", { code: minted.code });
    expect(exchanged.status).toBe(200);
    const setCookie = exchanged.headers.get("set-cookie")!;
    expect(setCookie).toMatch(
      /^portal_session=pat_[\w-]{43}; Max-Age=86400; Path=\/; HttpOnly; SameSite=Strict; Secure$/,
    );
    const cookie = { cookie: setCookie.split(";")[0]! };
    const origin = { ...cookie, origin: "https://keys.example.com" };

    const listed = await post("portal.listKeys", {}, cookie);
    expect(listed.body.data.map((k: Json) => k.keyId)).toEqual([mine]);
    const theirsAnswer = await post("portal.rerollKey", { keyId: theirs, expiration: 0 }, origin);
    expect([theirsAnswer.status, theirsAnswer.body.error.detail]).toEqual([
      404,
      `The key '${theirs}' does not exist.`,
    ]);
    const rerolled = await post("portal.rerollKey", { keyId: mine, expiration: 0 }, origin);
    expect(rerolled.status).toBe(200);
    expect(
      (
        await post(
          "portal.rerollKey",
          { keyId: rerolled.body.data.keyId, expiration: 0 },
          { ...cookie, origin: "http://keys.example.com" },
        )
      ).status,
    ).toBe(403);
    expect((await post("portal.endSession", {}, origin)).status).toBe(200);
    expect((await post("portal.listKeys", {}, cookie)).status).toBe(401);

    const stored = await db.sql`SELECT code_hash, token_hash FROM portal_sessions WHERE id = ${minted.id}`;
    expect(stored[0]!.code_hash).toBeNull();
    expect(stored[0]!.token_hash).not.toContain("pat_");
    const records = await db.sql<{ operation: string; actor_type: string; actor_id: string }[]>`
      SELECT operation, actor_type, actor_id FROM portal_audit_log WHERE workspace_id = ${a.workspaceId} ORDER BY time, operation`;
    // Two records may share a millisecond: compared as a set.
    expect(records.map((r) => `${r.operation} ${r.actor_type}`).sort()).toEqual([
      "portal.createSession root_key",
      "portal.endSession portal_session",
      "portal.exchangeCode portal_session",
      "portal.rerollKey portal_session",
      "portals.createPortal root_key",
    ]);
    expect(
      records.filter((r) => r.actor_type === "portal_session").every((r) => r.actor_id === minted.id),
    ).toBe(true);
  });

  // Eight: this client's budget of exchanges (10 at once) holds the first test's one and these.
  it("lets exactly one of eight concurrent exchanges of a code through", async () => {
    const { portalId } = await seed(b.rootKey);
    const { code } = await mint(b.rootKey, portalId, ["keys:read"]);
    const statuses = await Promise.all(
      Array.from({ length: 8 }, () => post("portal.exchangeCode", { code })),
    );
    expect(statuses.map((s) => s.status).sort()).toEqual([200, ...Array(7).fill(401)]);
  });

  it("bounds one workspace's live sessions, concurrent mints included, while another workspace still mints", async () => {
    const w = await createWorkspace(db.sql, "portal-greedy");
    const { portalId } = await seed(w.rootKey);
    const statuses = await Promise.all(
      Array.from({ length: 12 }, () => mint(w.rootKey, portalId, ["keys:read"])),
    );
    expect(statuses.filter((s) => s.status === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s.status === 412)).toHaveLength(7);
    const other = await createWorkspace(db.sql, "portal-other");
    const theirs = await seed(other.rootKey);
    expect((await mint(other.rootKey, theirs.portalId, ["keys:read"])).status).toBe(200);
  });
});
