import { createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { createRootKey } from "@latchkey/keys";
import { KeysService, VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { signingInterceptor } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { internalAuth, type Stack, startStack } from "./testing/process-stack.ts";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

async function newApi(name = "payments") {
  const res = await stack.call("apis.createApi", { name });
  expect(res.status).toBe(200);
  return res.body.data.apiId as string;
}

describe("create an API, issue a key, verify it (services as separate processes)", () => {
  it("answers VALID and spends one credit per verification until USAGE_EXCEEDED", async () => {
    const apiId = await newApi();
    const created = await stack.call("keys.createKey", { apiId, prefix: "sk", credits: { remaining: 2 } });
    expect(created.status).toBe(200);
    expect(created.body.meta.requestId).toMatch(/^req_/);
    expect(created.body.data.key).toMatch(/^sk_[1-9A-HJ-NP-Za-km-z]+$/);
    const { key, keyId } = created.body.data;

    const first = await stack.call("keys.verifyKey", { key });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ valid: true, code: "VALID", keyId, credits: 1, enabled: true });
    expect((await stack.call("keys.verifyKey", { key })).body.data).toMatchObject({
      valid: true,
      credits: 0,
    });
    expect((await stack.call("keys.verifyKey", { key })).body.data).toMatchObject({
      valid: false,
      code: "USAGE_EXCEEDED",
      credits: 0,
    });
  });

  it("gives exactly K VALID answers to N > K concurrent verifications of a key holding K credits", async () => {
    const apiId = await newApi();
    const { key, keyId } = (await stack.call("keys.createKey", { apiId, credits: { remaining: 25 } })).body
      .data;
    const results = await Promise.all(
      Array.from({ length: 120 }, () => stack.call("keys.verifyKey", { key })),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    const codes = results.map((r) => r.body.data.code);
    expect(codes.filter((c) => c === "VALID")).toHaveLength(25);
    expect(codes.filter((c) => c === "USAGE_EXCEEDED")).toHaveLength(95);
    const read = await stack.call("keys.getKey", { keyId });
    expect(read.body.data.credits.remaining).toBe(0);
  });

  it("answers NOT_FOUND for an unknown key and for a root key allowed to verify only another API", async () => {
    const apiId = await newApi();
    const other = await newApi("other");
    const { key } = (await stack.call("keys.createKey", { apiId })).body.data;
    expect((await stack.call("keys.verifyKey", { key: "sk_doesnotexist" })).body.data).toEqual({
      valid: false,
      code: "NOT_FOUND",
    });
    const scoped = await createRootKey(stack.db.sql, { permissions: [`api.${other}.verify_key`] });
    const res = await stack.call("keys.verifyKey", { key }, scoped.rootKey);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ valid: false, code: "NOT_FOUND" });
    const allowed = await createRootKey(stack.db.sql, { permissions: [`api.${apiId}.verify_key`] });
    expect((await stack.call("keys.verifyKey", { key }, allowed.rootKey)).body.data.code).toBe("VALID");
  });

  it("refuses apiId in a verification with 400 naming the field", async () => {
    const res = await stack.call("keys.verifyKey", { key: "sk_x", apiId: "api_123" });
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe("https://unkey.com/docs/errors/unkey/application/invalid_input");
    expect(JSON.stringify(res.body.error.errors)).toContain("apiId");
  });

  it("answers 401 for a missing or unknown root key and 404 for an unknown path, in the error shape", async () => {
    const missing = await stack.call("apis.createApi", { name: "x-api" }, null);
    expect(missing.status).toBe(401);
    expect(missing.body.meta.requestId).toMatch(/^req_/);
    const unknown = await stack.call("apis.createApi", { name: "x-api" }, "lk_root_nope");
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.type).toBe("https://unkey.com/docs/errors/unkey/authentication/key_not_found");
    const path = await stack.call("keys.doesNotExist", {});
    expect(path.status).toBe(404);
    expect(path.body.error.status).toBe(404);
  });

  // A tool inside the cluster that holds LATCHKEY_INTERNAL_SECRET signs its calls with the runtime's interceptor.
  const interceptors = [signingInterceptor(internalAuth)];

  it("answers a plain gRPC client of KeysService.VerifyKey over HTTP/2", async () => {
    const apiId = await newApi();
    const { key } = (await stack.call("keys.createKey", { apiId })).body.data;
    const grpc = createClient(
      KeysService,
      createGrpcTransport({ baseUrl: stack.keys[0]!.url, interceptors }),
    );
    const caller = { workspaceId: "ws_default", rootKeyId: "rk_grpc", permissions: ["api.*.verify_key"] };
    const res = await grpc.verifyKey({ caller, key, requestId: "req_grpc" });
    expect(res.valid).toBe(true);
    expect(res.code).toBe(VerifyCode.VALID);
  });

  it("answers gRPC-Web and Connect over HTTP/1.1 and Connect over HTTP/2 on the same port", async () => {
    const apiId = await newApi();
    const { key } = (await stack.call("keys.createKey", { apiId })).body.data;
    const caller = { workspaceId: "ws_default", rootKeyId: "rk_web", permissions: ["api.*.verify_key"] };
    const baseUrl = stack.keys[0]!.url;
    for (const transport of [
      createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors }),
      createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors }),
      createConnectTransport({ baseUrl, httpVersion: "2", interceptors }),
    ]) {
      const res = await createClient(KeysService, transport).verifyKey({ caller, key, requestId: "req_web" });
      expect(res.code).toBe(VerifyCode.VALID);
    }
  });
});
