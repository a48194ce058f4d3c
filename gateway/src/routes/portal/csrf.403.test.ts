import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";
import { routes } from "../index.ts";

const CHANGES = ["portal.createKey", "portal.rerollKey", "portal.endSession"] as const;
const READS = ["portal.getSession", "portal.listKeys", "portal.getVerifications"] as const;
const REFUSED =
  "A state-changing portal call must come from the portal's own origin: its Origin (or Sec-Fetch-Site: same-origin) must name this deployment's public URL.";

function portalHarness(publicUrl?: string) {
  let called = 0;
  const answer = () => {
    called++;
    return {};
  };
  const h = harness({
    ...(publicUrl ? { publicUrl } : {}),
    portal: {
      createKey: () => {
        called++;
        return { keyId: "key_1", key: "sk_1" };
      },
      rerollKey: () => {
        called++;
        return { keyId: "key_2", key: "sk_2" };
      },
      endSession: answer,
      getSession: () => {
        called++;
        return { session: { id: "ps_1", portal: { id: "portal_1", name: "Acme" }, expiresAt: 1n } };
      },
      listKeys: () => {
        called++;
        return { keys: [], pagination: { hasMore: false } };
      },
      getVerifications: () => {
        called++;
        return { buckets: [] };
      },
    },
  });
  return { h, calls: () => called };
}

describe("the portal's state-changing session calls and the same-origin rule", () => {
  it.each(CHANGES)("%s answers 403 from another origin, calling nothing", async (operation) => {
    const { h, calls } = portalHarness();
    for (const headers of <Record<string, string>[]>[
      { host: "keys.example.com", origin: "https://evil.example" },
      { host: "keys.example.com", origin: "null" },
      { host: "keys.example.com", "sec-fetch-site": "cross-site" },
      { host: "keys.example.com", "sec-fetch-site": "same-site", origin: "http://keys.example.com" },
    ]) {
      const res = await h.post(operation, routes[operation].example, { headers, authorization: null });
      expect([res.status, res.body.error.detail]).toEqual([403, REFUSED]);
    }
    expect(calls()).toBe(0);
  });

  it.each(CHANGES)(
    "%s is served same-origin (Origin or Sec-Fetch-Site) and without either (no browser)",
    async (operation) => {
      const { h, calls } = portalHarness();
      for (const headers of <Record<string, string>[]>[
        { host: "keys.example.com", origin: "http://keys.example.com" },
        { host: "keys.example.com", "sec-fetch-site": "same-origin" },
        { host: "keys.example.com" },
      ]) {
        expect(
          (await h.post(operation, routes[operation].example, { headers, authorization: null })).status,
        ).toBe(200);
      }
      expect(calls()).toBe(3);
    },
  );

  it("judges Origin against PUBLIC_URL when it is set, not against Host", async () => {
    const { h } = portalHarness("https://keys.acme.example");
    const post = (origin: string) =>
      h.post("portal.createKey", {}, { headers: { host: "10.0.0.5:7070", origin }, authorization: null });
    expect((await post("http://10.0.0.5:7070")).status).toBe(403);
    expect((await post("https://keys.acme.example")).status).toBe(200);
  });

  it.each(READS)("%s is a read: served from any origin, with no CORS header", async (operation) => {
    const { h } = portalHarness();
    const res = await h.post(operation, routes[operation].example, {
      headers: { host: "keys.example.com", origin: "https://evil.example" },
      authorization: null,
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.headers).filter((k) => k.startsWith("access-control-"))).toEqual([]);
    expect(res.headers["cache-control"]).toBe("no-store");
  });
});

describe("the same-origin rule over a real socket (the edge server reads the fields)", () => {
  it("refuses a cross-origin reroll, serves a same-origin one, and reads the cookie among others", async () => {
    const { listen } = await import("../../listen.ts");
    const { h } = portalHarness();
    const server = await listen(h.gateway, 0, "127.0.0.1");
    try {
      const post = (headers: Record<string, string>) =>
        fetch(`http://127.0.0.1:${server.port}/v2/portal.rerollKey`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify({ keyId: "key_1", expiration: 0 }),
        });
      const cookie = "theme=dark; portal_session=pat_edge";
      expect((await post({ cookie, origin: "https://evil.example" })).status).toBe(403);
      expect((await post({ cookie, "sec-fetch-site": "cross-site" })).status).toBe(403);
      expect((await post({ cookie, origin: `http://127.0.0.1:${server.port}` })).status).toBe(200);
      expect((await post({ cookie, "sec-fetch-site": "same-origin" })).status).toBe(200);
      expect((await post({ origin: `http://127.0.0.1:${server.port}` })).status).toBe(401);
    } finally {
      await server.close();
    }
  });
});
