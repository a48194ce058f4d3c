import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { CallerSchema } from "@latchkey/proto/common/v1/common_pb";
import { hashKey } from "@latchkey/runtime";
import bs58 from "bs58";
import { afterEach, describe, expect, it } from "vitest";
import { answeringEverything, harness, WORKSPACE } from "../testing/in-memory-gateway.ts";
import { listenEdge } from "./edge.ts";
import { listenNode } from "./node-server.ts";

const SERVERS = [
  ["edge", listenEdge],
  ["node:http", listenNode],
] as const;

/** A token a root key could be, not of the generated shape ("0" is no base58 digit). */
const bogus = () => `lk_root_0${randomBytes(24).toString("base64url")}`;

/**
 * Each HTTP server hands the gateway the client's address for its budget of root-key lookups:
 * the TCP peer, or with TRUSTED_PROXIES naming the peer, the hop X-Forwarded-For names. The
 * harness's clock stands still, so no budget refills during a test.
 */
describe.each(SERVERS)("%s, root-key lookups per client", (_, listen) => {
  const servers: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });

  async function serve(trustedProxies: string) {
    const h = harness({ ...answeringEverything(), trustedProxies });
    const server = await listen(h.gateway, 0, "127.0.0.1");
    servers.push(server);
    const post = async (token: string, forwardedFor?: string) => {
      const res = await fetch(`http://127.0.0.1:${server.port}/v2/apis.createApi`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${token}`,
          ...(forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor }),
        },
        body: '{"name":"payments"}',
      });
      const body = (await res.json()) as { error?: { detail: string } };
      return res.status === 503 && body.error?.detail.includes("for this client") ? "503 client" : res.status;
    };
    /** The statuses of `n` requests, each with a new bogus token, one after another. */
    const flood = async (n: number, forwardedFor?: string) => {
      const counts: Record<string, number> = {};
      for (let i = 0; i < n; i++) {
        const status = await post(bogus(), forwardedFor);
        counts[status] = (counts[status] ?? 0) + 1;
      }
      return counts;
    };
    /** A root key of the generated shape, known to the fake keys service. */
    const generated = () => {
      const plaintext = `lk_root_${bs58.encode(randomBytes(24))}`;
      h.rootKeys.set(
        hashKey(plaintext),
        create(CallerSchema, { workspaceId: WORKSPACE, permissions: ["*"] }),
      );
      return plaintext;
    };
    return { h, post, flood, generated };
  }

  it("keys the budget on the peer, ignoring X-Forwarded-For from a peer not trusted; the generated shape is served from the reserve", async () => {
    const { h, post, flood, generated } = await serve("");
    expect(await flood(30, "203.0.113.7")).toEqual({ 401: 20, "503 client": 10 });
    // Another claimed address is the same peer: its own budget is spent.
    expect(await post(h.rootKey("*"), "198.51.100.2")).toBe("503 client");
    expect(await post(generated(), "198.51.100.2")).toBe(200);
    expect(h.calls.authenticateRootKey).toBe(21);
  });

  it("keys the budget on the client X-Forwarded-For names when the peer is a trusted proxy", async () => {
    const { h, post, flood } = await serve("127.0.0.1/32");
    expect(await flood(30, "203.0.113.7")).toEqual({ 401: 20, "503 client": 10 });
    // What a client writes before the hop the proxy appended changes nothing.
    expect(await post(bogus(), "198.51.100.2, 203.0.113.7")).toBe("503 client");
    expect(await post(h.rootKey("*"), "198.51.100.2")).toBe(200);
    // Without the field the proxy itself is the client, with a budget of its own.
    expect(await post(h.rootKey("*"))).toBe(200);
    expect(h.calls.authenticateRootKey).toBe(22);
  });
});
