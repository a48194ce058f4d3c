import { createHash, randomBytes } from "node:crypto";
import { Code, ConnectError, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { createWorkspace } from "@latchkey/keys";
import { AnalyticsService } from "@latchkey/proto/analytics/v1/analytics_pb";
import { IdentityService } from "@latchkey/proto/identity/v1/identity_pb";
import { KeysService } from "@latchkey/proto/keys/v1/keys_pb";
import { RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { INTERNAL_AUTH_HEADER, InternalAuth, signingInterceptor } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { internalAuth, internalSecret, type Stack, startStack } from "./testing/process-stack.ts";

// Anything that can reach a service's port (a pod where NetworkPolicies are not enforced, a compose
// or VM deployment) must not be able to act as any workspace by writing a caller into the message.
const natsUrl = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";
const clickhouse = process.env["TEST_CLICKHOUSE_URL"] ?? "http://127.0.0.1:8123";
const suffix = randomBytes(4).toString("hex");
let stack: Stack;
let victim: { workspaceId: string; rootKey: string };
let secret: { keyId: string; key: string };

beforeAll(async () => {
  stack = await startStack({
    natsUrl,
    analytics: { clickhouseUrl: `${clickhouse}/latchkey_auth_e2e_${suffix}`, consumer: `auth_e2e_${suffix}` },
    env: { keys: { LATCHKEY_ENCRYPTION_KEY: randomBytes(32).toString("base64") } },
  });
  victim = await createWorkspace(stack.db.sql, `victim-${suffix}`);
  const apiId = (await stack.call("apis.createApi", { name: "vault" }, victim.rootKey)).body.data.apiId;
  const created = await stack.call("keys.createKey", { apiId, recoverable: true }, victim.rootKey);
  expect(created.status).toBe(200);
  secret = created.body.data;
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  await fetch(
    `${clickhouse}/?query=${encodeURIComponent(`DROP DATABASE IF EXISTS latchkey_auth_e2e_${suffix}`)}`,
    { method: "POST" },
  );
});

/** Every protocol a service serves, from connect-node's stock transports. */
function stockTransports(baseUrl: string): [string, Transport][] {
  return [
    [
      "Connect binary, HTTP/1.1",
      createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
    ],
    ["Connect JSON, HTTP/1.1", createConnectTransport({ baseUrl, httpVersion: "1.1" })],
    ["Connect binary, HTTP/2", createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true })],
    ["gRPC", createGrpcTransport({ baseUrl })],
    ["gRPC-Web", createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })],
  ];
}

async function refusal(call: Promise<unknown>): Promise<ConnectError> {
  const outcome = await call.then(
    (answer) => answer,
    (err: unknown) => err,
  );
  expect(outcome, "the call was answered").toBeInstanceOf(ConnectError);
  return outcome as ConnectError;
}

const forged = () => ({ workspaceId: victim.workspaceId, rootKeyId: "rk_forged", permissions: ["*"] });

describe("a stock Connect client that writes a caller of its own into the message", () => {
  it("cannot read another workspace's recoverable key from KeysService/GetKey, over any protocol", async () => {
    for (const [protocol, transport] of stockTransports(stack.keys[0]!.url)) {
      const keys = createClient(KeysService, transport);
      const err = await refusal(keys.getKey({ caller: forged(), keyId: secret.keyId, decrypt: true }));
      expect([protocol, err.code]).toEqual([protocol, Code.Unauthenticated]);
    }
  });

  it("is refused by the keys service's batch and root-key methods, which carry callers or none", async () => {
    const keys = createClient(
      KeysService,
      createConnectTransport({ baseUrl: stack.keys[0]!.url, httpVersion: "1.1", useBinaryFormat: true }),
    );
    const batch = keys.verifyKeyBatch({
      callers: [forged()],
      items: [{ callerIndex: 0, request: { key: secret.key, requestId: "req_forged" } }],
    });
    expect((await refusal(batch)).code).toBe(Code.Unauthenticated);
    // Carries no caller, and answers one for a root key's hash: signed too.
    const hash = createHash("sha256").update(victim.rootKey).digest("base64");
    const root = keys.authenticateRootKey({ hash });
    expect((await refusal(root)).code).toBe(Code.Unauthenticated);
  });

  it("is refused by the ratelimit service", async () => {
    for (const [protocol, transport] of stockTransports(stack.ratelimit.url)) {
      const ratelimit = createClient(RatelimitService, transport);
      const check = { namespace: "forged", identifier: "user_1", limit: 10n, duration: 60_000n };
      const err = await refusal(ratelimit.limit({ caller: forged(), check }));
      expect([protocol, err.code]).toEqual([protocol, Code.Unauthenticated]);
    }
  });

  it("is refused by the identity service", async () => {
    for (const [protocol, transport] of stockTransports(stack.identity.url)) {
      const identity = createClient(IdentityService, transport);
      const err = await refusal(identity.listPermissions({ caller: forged() }));
      expect([protocol, err.code]).toEqual([protocol, Code.Unauthenticated]);
    }
  });

  it("is refused by the analytics service", async () => {
    for (const [protocol, transport] of stockTransports(stack.analytics!.url)) {
      const analytics = createClient(AnalyticsService, transport);
      const err = await refusal(
        analytics.getVerifications({
          caller: forged(),
          start: BigInt(Date.now() - 3_600_000),
          end: BigInt(Date.now()),
        }),
      );
      expect([protocol, err.code]).toEqual([protocol, Code.Unauthenticated]);
    }
  });
});

/** Sends `header` instead of the call's own assertion. */
const sending =
  (header: string): Interceptor =>
  (next) =>
  (req) => {
    req.header.set(INTERNAL_AUTH_HEADER, header);
    return next(req);
  };

const keysClient = (interceptors: Interceptor[]) =>
  createClient(
    KeysService,
    createConnectTransport({
      baseUrl: stack.keys[0]!.url,
      httpVersion: "1.1",
      useBinaryFormat: true,
      interceptors,
    }),
  );

describe("a client that has seen or made an assertion, but not for this call", () => {
  it("is answered when it signs with the secret (the control: what the refusals below lack is the assertion)", async () => {
    const res = await keysClient([signingInterceptor(internalAuth)]).getKey({
      caller: forged(),
      keyId: secret.keyId,
      decrypt: true,
    });
    expect(res.key?.plaintext).toBe(secret.key);
  });

  it("cannot replay an assertion made for one method on another", async () => {
    const header = internalAuth.sign("/keys.v1.KeysService/ListKeys", { caller: forged() });
    const err = await refusal(
      keysClient([sending(header)]).getKey({ caller: forged(), keyId: secret.keyId, decrypt: true }),
    );
    expect(err.code).toBe(Code.Unauthenticated);
  });

  it("cannot use an expired assertion", async () => {
    const tenMinutesAgo = new InternalAuth([internalSecret], () => Date.now() - 600_000);
    const err = await refusal(
      keysClient([signingInterceptor(tenMinutesAgo)]).getKey({
        caller: forged(),
        keyId: secret.keyId,
        decrypt: true,
      }),
    );
    expect(err.code).toBe(Code.Unauthenticated);
    expect(err.rawMessage).toContain("expired");
  });

  it("cannot send an assertion made for its own caller with another workspace's caller", async () => {
    const mine = { workspaceId: "ws_default", rootKeyId: "rk_mine", permissions: ["*"] };
    const header = internalAuth.sign("/keys.v1.KeysService/GetKey", { caller: mine });
    const err = await refusal(
      keysClient([sending(header)]).getKey({ caller: forged(), keyId: secret.keyId, decrypt: true }),
    );
    expect(err.code).toBe(Code.Unauthenticated);
    const batchHeader = internalAuth.sign("/keys.v1.KeysService/VerifyKeyBatch", { callers: [mine] });
    const batch = keysClient([sending(batchHeader)]).verifyKeyBatch({
      callers: [mine, forged()],
      items: [{ callerIndex: 1, request: { key: secret.key, requestId: "req_tampered" } }],
    });
    expect((await refusal(batch)).code).toBe(Code.Unauthenticated);
  });
});

describe("the gateway, which vouches for the callers it resolves", () => {
  it("reads the victim's key for the victim's own root key, and no other workspace's root key can", async () => {
    const read = await stack.call("keys.getKey", { keyId: secret.keyId, decrypt: true }, victim.rootKey);
    expect(read.status).toBe(200);
    expect(read.body.data.plaintext).toBe(secret.key);
    const other = await stack.call("keys.getKey", { keyId: secret.keyId, decrypt: true });
    expect(other.status).toBe(404);
  });

  it("verifies keys (keys -> ratelimit, keys -> identity signed by keys), limits, and reaches identity and analytics", async () => {
    const call = (operation: string, body: unknown) => stack.call(operation, body, victim.rootKey);
    const apiId = (await call("apis.createApi", { name: "signed" })).body.data.apiId;
    expect(
      (await call("permissions.createPermission", { name: "read", slug: "documents.read" })).status,
    ).toBe(200);
    expect((await call("identities.createIdentity", { externalId: `user_${suffix}` })).status).toBe(200);
    const { key } = (
      await call("keys.createKey", {
        apiId,
        externalId: `user_${suffix}`,
        permissions: ["documents.read"],
        ratelimits: [{ name: "requests", limit: 2, duration: 60_000, autoApply: true }],
      })
    ).body.data;
    const verified = await Promise.all(
      [1, 2, 3].map(() => call("keys.verifyKey", { key, permissions: "documents.read" })),
    );
    expect(verified.map((v) => v.status)).toEqual([200, 200, 200]);
    expect(verified.map((v) => v.body.data.code).sort()).toEqual(["RATE_LIMITED", "VALID", "VALID"]);
    const limited = await call("ratelimit.limit", {
      namespace: "signed",
      identifier: "u",
      limit: 1,
      duration: 60_000,
    });
    expect(limited.status).toBe(200);
    expect(limited.body.data.success).toBe(true);
    expect((await call("identities.listIdentities", {})).body.data).toHaveLength(1);
    const analytics = await call("analytics.getVerifications", {
      query: "SELECT count(*) AS total FROM key_verifications_v1",
    });
    expect(analytics.status).toBe(200);
  });
});
