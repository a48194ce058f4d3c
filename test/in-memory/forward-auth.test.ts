import { listen } from "@latchkey/gateway";
import { parsePolicies } from "@latchkey/gateway/forward-auth/file";
import type { PolicySet } from "@latchkey/gateway/forward-auth/policy";
import { listenNode } from "@latchkey/gateway/node-server";
import { hashKey } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inMemoryStack } from "../testing/in-memory-stack.ts";

// The forward-auth endpoint over the real services: how the proxy's root key, the policies and
// each proxy's way of describing the original request are read. What proxies make of the answers
// is test/forward-auth-proxies.e2e.test.ts's.
describe("forward-auth over the real services", () => {
  const policies: Record<string, PolicySet> = {};
  const { gateway, keysDeps, rootKey } = inMemoryStack("forward_auth", {
    gateway: {
      forwardAuthPolicies: { of: (ws) => policies[ws] ?? parsePolicies("policies: []", "none") },
      trustedProxies: "127.0.0.1",
    },
  });
  let server: Awaited<ReturnType<typeof listen>>;
  let apiId: string;
  let otherApiId: string;
  let key: string;
  let otherApiKey: string;

  const putRootKey = (name: string, workspaceId: string, permissions: string[]) => {
    const plaintext = `lk_root_fa_${name}_0123456789`;
    keysDeps.store.putRootKey({
      id: `rk_${name}`,
      workspaceId,
      permissions,
      revokedAt: null,
      hash: hashKey(plaintext),
    });
    return plaintext;
  };
  const data = async (operation: string, body: unknown) => {
    const res = await fetch(`http://127.0.0.1:${server.port}/v2/${operation}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as { data: any };
    expect(res.status, JSON.stringify(json)).toBe(200);
    return json.data;
  };
  const ask = async (path: string, headers: Record<string, string>, method = "GET") => {
    const res = await fetch(`http://127.0.0.1:${server.port}${path}`, { method, headers });
    const text = await res.text();
    const nginxAsked = headers["x-original-uri"] !== undefined;
    // A 200 has no body (its headers say it all); a refusal's body rides in x-latchkey-answer too,
    // and nginx, which never reads a body, gets none.
    if (res.status === 200) {
      expect(text).toBe("");
      const body = {
        valid: true,
        code: res.headers.get("x-latchkey-dry-run") ?? "VALID",
        policy: res.headers.get("x-latchkey-policy"),
      };
      return { status: res.status, headers: res.headers, body: body as any };
    }
    const answer = res.headers.get("x-latchkey-answer");
    expect(text).toBe(nginxAsked ? "" : answer);
    return { status: res.status, headers: res.headers, body: JSON.parse(answer!) as any };
  };
  let proxyKey: string;

  beforeAll(async () => {
    server = await listen(gateway, 0, "127.0.0.1");
    apiId = (await data("apis.createApi", { name: "forward" })).apiId;
    otherApiId = (await data("apis.createApi", { name: "fa-other" })).apiId;
    key = (await data("keys.createKey", { apiId })).key;
    otherApiKey = (await data("keys.createKey", { apiId: otherApiId })).key;
    policies["ws_forward_auth"] = parsePolicies(
      `
policies:
  - { name: q, apiId: ${apiId}, paths: ["/q/**"], key: { from: query, name: api_key } }
  - { name: c, apiId: ${apiId}, paths: ["/c/**"], key: { from: cookie, name: lk } }
  - { name: writes, apiId: ${apiId}, methods: [DELETE], paths: ["/w/**"] }
  - { name: main, apiId: ${apiId}, paths: ["/main/**"] }
`,
      "test",
    );
    proxyKey = putRootKey("proxy", "ws_forward_auth", ["forward_auth.*.verify", `api.${apiId}.verify_key`]);
  });
  afterAll(() => server.close());

  const nginx = (uri: string, extra: Record<string, string> = {}) => ({
    "x-latchkey-root-key": proxyKey,
    "x-original-uri": uri,
    "x-original-method": "GET",
    "x-original-host": "api.example.com",
    ...extra,
  });

  it("allows a valid key, whatever method the proxy asks with", async () => {
    for (const method of ["GET", "POST", "DELETE", "PATCH"]) {
      const r = await ask("/forward-auth", nginx("/main/x", { authorization: `Bearer ${key}` }), method);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ valid: true, code: "VALID", policy: "main" });
      expect(r.headers.get("x-latchkey-key-id")).toMatch(/^key_/);
    }
  });

  it("checks a key's IP allow-list against the client the proxy reports, failing closed without one", async () => {
    const listed = (await data("keys.createKey", { apiId, ipAllowList: ["203.0.113.0/24", "2001:db8::/32"] }))
      .key as string;
    const from = (forwardedFor: string | undefined) =>
      ask(
        "/forward-auth",
        nginx("/main/x", {
          authorization: `Bearer ${listed}`,
          ...(forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor }),
        }),
      );
    expect((await from("203.0.113.9")).status).toBe(200);
    expect((await from("2001:db8::7")).status).toBe(200);
    const outside = await from("198.51.100.1");
    expect(outside.status).toBe(403);
    expect(outside.body.code).toBe("FORBIDDEN_IP");
    // No client named: the proxy's own address (127.0.0.1) is checked, and is not on the list.
    const unnamed = await from(undefined);
    expect(unnamed.status).toBe(403);
    expect(unnamed.body.code).toBe("FORBIDDEN_IP");
  });

  it("answers a proxy without a root key, or with one that is unknown or lacks a permission, 500", async () => {
    const without = await ask("/forward-auth", {
      "x-original-uri": "/main/x",
      authorization: `Bearer ${key}`,
    });
    expect(without.status).toBe(500);
    expect(without.body.code).toBe("PROXY_MISCONFIGURED");
    const unknown = await ask(
      "/forward-auth",
      nginx("/main/x", { "x-latchkey-root-key": "lk_root_unknown_000000000" }),
    );
    expect(unknown.status).toBe(500);
    expect(unknown.body.message).toMatch(/root key is not valid/);
    const noForwardAuth = putRootKey("verify_only", "ws_forward_auth", [`api.${apiId}.verify_key`]);
    const a = await ask(
      "/forward-auth",
      nginx("/main/x", { "x-latchkey-root-key": noForwardAuth, authorization: `Bearer ${key}` }),
    );
    expect(a.status).toBe(500);
    expect(a.body.message).toBe("The proxy's root key lacks 'forward_auth.main.verify'.");
    const onePolicy = putRootKey("one_policy", "ws_forward_auth", [
      "forward_auth.q.verify",
      "api.*.verify_key",
    ]);
    const b = await ask(
      "/forward-auth",
      nginx("/main/x", { "x-latchkey-root-key": onePolicy, authorization: `Bearer ${key}` }),
    );
    expect(b.body.message).toBe("The proxy's root key lacks 'forward_auth.main.verify'.");
    const noVerify = putRootKey("no_verify", "ws_forward_auth", ["forward_auth.*.verify"]);
    const c = await ask(
      "/forward-auth",
      nginx("/main/x", { "x-latchkey-root-key": noVerify, authorization: `Bearer ${key}` }),
    );
    expect(c.body.message).toBe(`The proxy's root key lacks 'api.${apiId}.verify_key'.`);
  });

  it("refuses a request no policy covers 403 NO_POLICY", async () => {
    const r = await ask("/forward-auth", nginx("/elsewhere", { authorization: `Bearer ${key}` }));
    expect(r.status).toBe(403);
    expect(r.body.code).toBe("NO_POLICY");
    const writes = await ask("/forward-auth", nginx("/w/1", { authorization: `Bearer ${key}` }));
    expect(writes.body.code).toBe("NO_POLICY");
    const del = await ask(
      "/forward-auth",
      nginx("/w/1", { authorization: `Bearer ${key}`, "x-original-method": "DELETE" }),
    );
    expect(del.body).toMatchObject({ code: "VALID", policy: "writes" });
  });

  it("answers a key of another API than the policy's as unknown", async () => {
    const r = await ask("/forward-auth", nginx("/main/x", { authorization: `Bearer ${otherApiKey}` }));
    expect(r.status).toBe(401);
    expect(r.body.code).toBe("NOT_FOUND");
  });

  it("gives another workspace's proxy none of these policies, and never its keys", async () => {
    const stranger = putRootKey("stranger", "ws_stranger", ["*"]);
    const r = await ask(
      "/forward-auth",
      nginx("/main/x", { "x-latchkey-root-key": stranger, authorization: `Bearer ${key}` }),
    );
    expect(r.status).toBe(403);
    expect(r.body.code).toBe("NO_POLICY");
    policies["ws_stranger"] = parsePolicies(`policies: [{ name: main, apiId: ${apiId} }]`, "stranger");
    const again = await ask(
      "/forward-auth",
      nginx("/main/x", { "x-latchkey-root-key": stranger, authorization: `Bearer ${key}` }),
    );
    expect(again.status).toBe(401);
    expect(again.body.code).toBe("NOT_FOUND");
  });

  it("reads the key from a query parameter or a cookie where the policy says", async () => {
    const q = await ask("/forward-auth", nginx(`/q/list?page=2&api_key=${encodeURIComponent(key)}`));
    expect(q.body).toMatchObject({ code: "VALID", policy: "q" });
    const qMissing = await ask("/forward-auth", nginx("/q/list?page=2", { authorization: `Bearer ${key}` }));
    expect(qMissing.status).toBe(401);
    expect(qMissing.headers.get("www-authenticate")).toBe(
      'ApiKey realm="latchkey", in="query", name="api_key"',
    );
    const c = await ask("/forward-auth", nginx("/c/x", { cookie: `theme=dark; lk=${key}; other=1` }));
    expect(c.body).toMatchObject({ code: "VALID", policy: "c" });
  });

  it("reads Caddy's and Traefik's X-Forwarded-* and Envoy's path", async () => {
    const caddy = await ask("/forward-auth", {
      "x-latchkey-root-key": proxyKey,
      "x-forwarded-method": "DELETE",
      "x-forwarded-uri": "/w/9",
      "x-forwarded-host": "api.example.com",
      authorization: `Bearer ${key}`,
    });
    expect(caddy.body).toMatchObject({ code: "VALID", policy: "writes" });
    const envoy = await ask(
      "/forward-auth/w/9?x=1",
      { "x-latchkey-root-key": proxyKey, authorization: `Bearer ${key}` },
      "DELETE",
    );
    expect(envoy.body).toMatchObject({ code: "VALID", policy: "writes" });
  });

  it("answers a root key of the wrong shape 500 without asking the keys service", async () => {
    const r = await ask("/forward-auth", nginx("/main/x", { "x-latchkey-root-key": "short" }));
    expect(r.status).toBe(500);
    expect(r.body.code).toBe("PROXY_MISCONFIGURED");
  });

  it("reads the proxy's request alike through node:http (HTTP_SERVER=node) and through the edge", async () => {
    let http: import("node:http").Server | undefined;
    const node = await listenNode(gateway, 0, "127.0.0.1", {}, (s) => {
      http = s;
    });
    try {
      for (const port of [server.port, node.port]) {
        const res = await fetch(`http://127.0.0.1:${port}/forward-auth`, {
          method: "PUT",
          headers: { ...nginx("/c/x"), cookie: `lk=${key}` },
          body: "ignored",
        });
        expect(res.status).toBe(200);
        expect(res.headers.get("x-latchkey-policy")).toBe("c");
      }
    } finally {
      // Its close() would close the gateway too, which the edge server still serves: only the socket here.
      http!.closeAllConnections();
      await new Promise((r) => http!.close(r));
    }
  });

  it("leaves the API's paths alone: /forward-authx is no forward-auth path", async () => {
    const r = await fetch(`http://127.0.0.1:${server.port}/forward-authx`);
    expect(r.status).toBe(404);
  });
});
