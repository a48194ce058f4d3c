import { Code, ConnectError } from "@connectrpc/connect";
import type { VerifyKeyBatchRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness, WORKSPACE } from "../../testing/in-memory-gateway.ts";
import { parsePolicies } from "./file.ts";

const policies = parsePolicies("policies: [{ name: main, apiId: api_main }]", "test");

describe("forward-auth in the gateway", () => {
  it("sends its verifications in the same batches as keys.verifyKey, as the proxy's root key narrowed to the policy's API", async () => {
    const batches: VerifyKeyBatchRequest[] = [];
    const h = harness({
      forwardAuthPolicies: {
        of: (ws) => (ws === WORKSPACE ? policies : parsePolicies("policies: []", "none")),
      },
      keys: {
        verifyKeyBatch(req) {
          batches.push(req);
          return {
            results: req.items.map(() => ({
              result: {
                case: "response" as const,
                value: { valid: true, code: VerifyCode.VALID, keyId: "key_1" },
              },
            })),
          };
        },
      },
    });
    const proxy = h.rootKey("forward_auth.*.verify", "api.*.verify_key");
    const asked = h.request("GET", "/forward-auth", undefined, {
      "x-latchkey-root-key": proxy,
      "x-forwarded-uri": "/orders",
      "x-forwarded-method": "GET",
      authorization: "Bearer sk_client",
    });
    const direct = h.post("keys.verifyKey", { key: "sk_other" }, { key: proxy });
    const [a, d] = await Promise.all([asked, direct]);
    expect(a.status).toBe(200);
    expect(a.headers["x-latchkey-key-id"]).toBe("key_1");
    expect(d.status).toBe(200);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.items.map((i) => i.request?.key)).toEqual(["sk_client", "sk_other"]);
    const callers = batches[0]!.items.map((i) => batches[0]!.callers[i.callerIndex]!.permissions);
    expect(callers).toEqual([["api.api_main.verify_key"], ["forward_auth.*.verify", "api.*.verify_key"]]);
    await h.close();
  });

  it("answers 503 when the keys service is down, its body in x-latchkey-answer for nginx", async () => {
    const h = harness({
      forwardAuthPolicies: { of: () => policies },
      keys: {
        verifyKeyBatch() {
          throw new ConnectError("down", Code.Unavailable);
        },
      },
    });
    const proxy = h.rootKey("*");
    const viaCaddy = await h.request("GET", "/forward-auth", undefined, {
      "x-latchkey-root-key": proxy,
      "x-forwarded-uri": "/orders",
      authorization: "Bearer sk_client",
    });
    expect(viaCaddy.status).toBe(503);
    expect(viaCaddy.body).toMatchObject({ code: "UNAVAILABLE" });
    const viaNginx = await h.request("GET", "/forward-auth", undefined, {
      "x-latchkey-root-key": proxy,
      "x-original-uri": "/orders",
      authorization: "Bearer sk_client",
    });
    expect(viaNginx.status).toBe(503);
    expect(viaNginx.body).toBeUndefined();
    expect(JSON.parse(String(viaNginx.headers["x-latchkey-answer"]))).toMatchObject({ code: "UNAVAILABLE" });
    await h.close();
  });
});
