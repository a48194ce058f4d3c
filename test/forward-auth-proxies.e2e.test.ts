import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRootKey } from "@latchkey/keys";
import { GATEWAY_PROCESS } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeProxy, recordingUpstream, startCaddy, startNginx } from "./testing/edge-proxies.ts";
import { type Proc, type Stack, startProcess, startStack } from "./testing/process-stack.ts";

// Real nginx and real Caddy in front of a real upstream, asking a gateway (its own process, over
// the real services) through deploy/edge's configurations: every outcome reaches the client with
// its status and headers, and a refused request never reaches the upstream.
describe("forward-auth behind real nginx and Caddy", () => {
  let stack: Stack;
  let gateway: Proc;
  let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
  const proxies: Record<string, EdgeProxy> = {};
  let apiId: string;
  let dir: string;

  const data = async (operation: string, body: unknown) => {
    const res = await stack.call(operation, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  };
  const newKey = async (extra: Record<string, unknown> = {}) =>
    (await data("keys.createKey", {
      apiId,
      ratelimits: [{ name: "requests", limit: 1000, duration: 60_000 }],
      ...extra,
    })) as { key: string; keyId: string };

  beforeAll(async () => {
    stack = await startStack();
    apiId = (await data("apis.createApi", { name: "edge" })).apiId;
    dir = mkdtempSync(join(tmpdir(), "latchkey-forward-auth-"));
    const policies = join(dir, "policies.yaml");
    writeFileSync(
      policies,
      `# first match wins
policies:
  - name: admin
    paths: ["/admin/**"]
    apiId: ${apiId}
    permissions: admin.write
  - name: trial
    paths: ["/trial/**"]
    apiId: ${apiId}
    dryRun: true
  - name: header-key
    paths: ["/h/**"]
    apiId: ${apiId}
    key: { from: header, name: X-API-Key }
  - name: api
    paths: ["/**"]
    apiId: ${apiId}
    ratelimits: [{ name: requests }]
    upstream: { identity: true, credits: true, meta: [plan] }
    stripKey: true
`,
    );
    const proxyKey = await createRootKey(stack.db.sql, {
      permissions: ["forward_auth.*.verify", `api.${apiId}.verify_key`],
      name: "edge proxy",
    });
    const urls = {
      KEYS_URL: stack.keys[0]!.url,
      RATELIMIT_URL: stack.ratelimit.url,
      IDENTITY_URL: stack.identity.url,
    };
    gateway = await startProcess("gateway-forward-auth", GATEWAY_PROCESS.entry, {
      ...urls,
      METRICS_PORT: "0",
      FORWARD_AUTH_POLICIES_FILE: policies,
      FORWARD_AUTH_WORKSPACE_ID: "ws_default",
    });
    upstream = await recordingUpstream();
    const options = {
      latchkey: gateway.url.slice("http://".length),
      rootKey: proxyKey.rootKey,
      upstream: `127.0.0.1:${upstream.port}`,
    };
    proxies["nginx"] = await startNginx(options);
    proxies["caddy"] = await startCaddy(options);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(Object.values(proxies).map((p) => p.stop()));
    await upstream?.close();
    await gateway?.stop();
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A request through the proxy, marked so the upstream's record of it can be found. */
  let marks = 0;
  async function through(proxy: string, path: string, headers: Record<string, string> = {}) {
    const mark = `m${++marks}`;
    const res = await fetch(`${proxies[proxy]!.url}${path}`, {
      headers: { ...headers, "x-test-mark": mark },
    });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {}
    const seen = upstream.received.filter((r) => r.headers["x-test-mark"] === mark);
    return { res, body, seen, out: () => `${res.status} ${text}\n${proxies[proxy]!.output()}` };
  }

  describe.each(["nginx", "caddy"])("%s", (proxy) => {
    it("lets a valid key through with the identity headers, the key stripped", async () => {
      const { key, keyId } = await newKey({
        externalId: `user_${proxy}`,
        meta: { plan: "pro" },
        credits: { remaining: 100 },
      });
      const r = await through(proxy, "/orders?x=1", {
        authorization: `Bearer ${key}`,
        // Made up by the client: the upstream must hear Latchkey's, never these.
        "x-latchkey-key-id": "key_forged",
        "x-latchkey-identity": "admin",
      });
      expect(r.res.status, r.out()).toBe(200);
      expect(r.body).toBe("upstream");
      expect(r.seen).toHaveLength(1);
      const h = r.seen[0]!.headers;
      expect(r.seen[0]!.url).toBe("/orders?x=1");
      expect(h["x-latchkey-key-id"]).toBe(keyId);
      expect(h["x-latchkey-identity"]).toBe(`user_${proxy}`);
      expect(h["x-latchkey-meta-plan"]).toBe("pro");
      expect(h["x-latchkey-credits"]).toBe("99");
      // The policy strips the key: nginx drops Authorization, Caddy forwards it empty.
      expect(h.authorization ?? "").toBe("");
      if (proxy === "nginx") {
        // nginx also hands the client the draft's rate-limit fields of an allowed request.
        expect(r.res.headers.get("ratelimit-policy")).toBe('"requests";q=1000;w=60');
        expect(r.res.headers.get("ratelimit")).toMatch(/^"requests";r=999;t=([1-5]?[0-9]|60)$/);
      }
    });

    it("answers a request without a key 401 with WWW-Authenticate, never reaching the upstream", async () => {
      const r = await through(proxy, "/orders");
      expect(r.res.status, r.out()).toBe(401);
      expect(r.res.headers.get("www-authenticate")).toBe('Bearer realm="latchkey"');
      expect(r.body).toMatchObject({ valid: false, code: "MISSING_KEY", policy: "api" });
      expect(r.seen).toHaveLength(0);
    });

    it("answers an unknown key 401", async () => {
      const r = await through(proxy, "/orders", { authorization: "Bearer sk_not_a_key_of_ours" });
      expect(r.res.status, r.out()).toBe(401);
      expect(r.res.headers.get("www-authenticate")).toBe('Bearer realm="latchkey", error="invalid_token"');
      expect(r.body).toMatchObject({ valid: false, code: "NOT_FOUND" });
      expect(r.seen).toHaveLength(0);
    });

    it("answers a disabled key 403", async () => {
      const { key } = await newKey({ enabled: false });
      const r = await through(proxy, "/orders", { authorization: `Bearer ${key}` });
      expect(r.res.status, r.out()).toBe(403);
      expect(r.body).toMatchObject({ valid: false, code: "DISABLED" });
      expect(r.seen).toHaveLength(0);
    });

    it("answers a key without the policy's permissions 403", async () => {
      const { key } = await newKey();
      const r = await through(proxy, "/admin/users", { authorization: `Bearer ${key}` });
      expect(r.res.status, r.out()).toBe(403);
      expect(r.body).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS", policy: "admin" });
      expect(r.seen).toHaveLength(0);
      // The same path spelled otherwise is still the admin policy's, not the catch-all's.
      // Nor can the client tell Latchkey another path in the proxies' headers.
      const forged = await through(proxy, "/admin/users", {
        authorization: `Bearer ${key}`,
        "x-original-uri": "/orders",
        "x-original-method": "GET",
        "x-forwarded-uri": "/orders",
      });
      expect(forged.res.status, forged.out()).toBe(403);
      expect(forged.body).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS", policy: "admin" });
      for (const path of ["/%61dmin/users", "//admin/users", "/x/%2e%2e/admin/users"]) {
        const other = await through(proxy, path, { authorization: `Bearer ${key}` });
        expect(other.res.status, `${path}: ${other.out()}`).toBe(403);
        expect(other.body).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS", policy: "admin" });
        expect(other.seen).toHaveLength(0);
      }
    });

    it("answers a rate-limited key 429 with Retry-After and the RateLimit fields", async () => {
      const { key } = await newKey({ ratelimits: [{ name: "requests", limit: 1, duration: 60_000 }] });
      const first = await through(proxy, "/orders", { authorization: `Bearer ${key}` });
      expect(first.res.status, first.out()).toBe(200);
      const r = await through(proxy, "/orders", { authorization: `Bearer ${key}` });
      expect(r.res.status, r.out()).toBe(429);
      expect(Number(r.res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(Number(r.res.headers.get("retry-after"))).toBeLessThanOrEqual(60);
      expect(r.res.headers.get("ratelimit-policy")).toBe('"requests";q=1;w=60');
      expect(r.res.headers.get("ratelimit")).toMatch(/^"requests";r=0;t=\d+$/);
      expect(r.body).toMatchObject({ valid: false, code: "RATE_LIMITED" });
      expect(r.seen).toHaveLength(0);
    });

    it("answers a key with no credits left 403 USAGE_EXCEEDED", async () => {
      const { key } = await newKey({ credits: { remaining: 0 } });
      const r = await through(proxy, "/orders", { authorization: `Bearer ${key}` });
      expect(r.res.status, r.out()).toBe(403);
      expect(r.body).toMatchObject({ valid: false, code: "USAGE_EXCEEDED" });
      expect(r.seen).toHaveLength(0);
    });

    it("reads the key from the header the policy names", async () => {
      const { key, keyId } = await newKey();
      const r = await through(proxy, "/h/items", { "x-api-key": key });
      expect(r.res.status, r.out()).toBe(200);
      expect(r.seen[0]!.headers["x-latchkey-key-id"]).toBe(keyId);
      // This policy does not strip: the upstream sees the key where the client put it.
      expect(r.seen[0]!.headers["x-api-key"]).toBe(key);
      const bearer = await through(proxy, "/h/items", { authorization: `Bearer ${key}` });
      expect(bearer.res.status, bearer.out()).toBe(401);
      expect(bearer.res.headers.get("www-authenticate")).toBe(
        'ApiKey realm="latchkey", in="header", name="X-API-Key"',
      );
    });

    it("lets every request of a dry-run policy through, telling the upstream the verdict", async () => {
      const { key } = await newKey({ enabled: false });
      const disabled = await through(proxy, "/trial/x", { authorization: `Bearer ${key}` });
      expect(disabled.res.status, disabled.out()).toBe(200);
      expect(disabled.seen[0]!.headers["x-latchkey-dry-run"]).toBe("DISABLED");
      const missing = await through(proxy, "/trial/x");
      expect(missing.res.status, missing.out()).toBe(200);
      expect(missing.seen[0]!.headers["x-latchkey-dry-run"]).toBe("MISSING_KEY");
    });
  });

  it("records the verifications as keys.verifyKey does: the credits are spent", async () => {
    const { key, keyId } = await newKey({ credits: { remaining: 10 } });
    for (const proxy of ["nginx", "caddy"]) {
      const r = await through(proxy, "/orders", { authorization: `Bearer ${key}` });
      expect(r.res.status, r.out()).toBe(200);
    }
    expect((await data("keys.getKey", { keyId })).credits.remaining).toBe(8);
  });
});
