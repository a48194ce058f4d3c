import type { CreateSessionRequest } from "@latchkey/proto/portal/v1/portal_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

const minted = () => ({ sessionId: "ps_1", code: "pst_abc", codeExpiresAt: 1n });

describe("POST /v2/portal.createSession answering 200", () => {
  it("forwards the request and answers Unkey's {id, url}, the URL on the request's own origin", async () => {
    const seen: CreateSessionRequest[] = [];
    const h = harness({
      portal: {
        createSession: (req) => {
          seen.push(req);
          return minted();
        },
      },
    });
    const res = await h.post(
      "portal.createSession",
      {
        portal: "acme",
        externalId: "user_1",
        scopes: ["keys:read", "analytics:read"],
        preview: true,
        returnUrl: "https://app.example/x",
      },
      { headers: { host: "localhost:7070" } },
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: "ps_1", url: "http://localhost:7070/portal/?code=pst_abc" });
    expect([res.headers["cache-control"], res.headers["pragma"]]).toEqual(["no-store", "no-cache"]);
    expect(seen.map((r) => [r.portal, r.externalId, r.scopes, r.preview, r.returnUrl])).toEqual([
      ["acme", "user_1", ["keys:read", "analytics:read"], true, "https://app.example/x"],
    ]);
  });

  it("builds the URL on PUBLIC_URL, its path kept", async () => {
    const h = harness({ publicUrl: "https://example.com/keys/", portal: { createSession: minted } });
    const res = await h.post("portal.createSession", {
      portal: "acme",
      externalId: "u",
      scopes: ["keys:read"],
    });
    expect(res.body.data.url).toBe("https://example.com/keys/portal/?code=pst_abc");
  });

  it("believes X-Forwarded-Proto and -Host from a trusted proxy only", async () => {
    const body = { portal: "acme", externalId: "u", scopes: ["keys:read"] };
    const headers = {
      host: "10.0.0.5:7070",
      "x-forwarded-proto": "https",
      "x-forwarded-host": "keys.example.com",
    };
    // Requests in memory come from no peer: no proxy is trusted, whatever TRUSTED_PROXIES says.
    const h = harness({ trustedProxies: "10.0.0.0/8", portal: { createSession: minted } });
    expect((await h.post("portal.createSession", body, { headers })).body.data.url).toBe(
      "http://10.0.0.5:7070/portal/?code=pst_abc",
    );
  });
});
