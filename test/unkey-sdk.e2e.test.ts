import { Unkey } from "@unkey/api";
import { HTTPClient } from "@unkey/api/lib/http";
import { NotFoundErrorResponse } from "@unkey/api/models/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./testing/process-stack.ts";

// Unkey's own TypeScript SDK, unchanged, pointed at Latchkey (the gateway and the services as separate
// processes). The SDK validates every answer against Unkey's schemas, so an answer that does not match
// them fails here as a ResponseValidationError.
let stack: Stack;
let unkey: Unkey;
beforeAll(async () => {
  stack = await startStack();
  unkey = new Unkey({
    rootKey: stack.rootKey,
    serverURL: stack.gateway.url,
    retryConfig: { strategy: "none" },
  });
});
afterAll(async () => {
  await stack?.stop();
});

describe("Unkey's TypeScript SDK against Latchkey", () => {
  it("creates an API and a key with credits, a limit and an identity, and verifies it", async () => {
    const { data: api } = await unkey.apis.createApi({ name: "sdk-payments" });
    const { data: created } = await unkey.keys.createKey({
      apiId: api.apiId,
      prefix: "sk",
      externalId: "sdk_user_42",
      meta: { plan: "pro" },
      credits: { remaining: 2 },
      ratelimits: [{ name: "requests", limit: 10, duration: 60_000, autoApply: true }],
    });
    expect(created.key).toMatch(/^sk_/);

    const first = await unkey.keys.verifyKey({ key: created.key });
    expect(first.data).toMatchObject({ valid: true, code: "VALID", keyId: created.keyId, credits: 1 });
    expect(first.data.identity?.externalId).toBe("sdk_user_42");
    expect(first.data.ratelimits?.[0]).toMatchObject({ name: "requests", limit: 10, remaining: 9 });
    expect((await unkey.keys.verifyKey({ key: created.key })).data).toMatchObject({
      valid: true,
      credits: 0,
    });
    expect((await unkey.keys.verifyKey({ key: created.key })).data).toMatchObject({
      valid: false,
      code: "USAGE_EXCEEDED",
    });

    const { data: read } = await unkey.keys.getKey({ keyId: created.keyId });
    expect(read).toMatchObject({ keyId: created.keyId, meta: { plan: "pro" }, credits: { remaining: 0 } });
    // listKeys answers the SDK's page iterator; its first page is the envelope.
    const page = await unkey.apis.listKeys({ apiId: api.apiId });
    expect(page.result.data.map((k) => k.keyId)).toEqual([created.keyId]);
    expect(page.result.pagination?.hasMore).toBe(false);
  });

  it("updates credits and a key, and answers a missing key with the SDK's 404 error", async () => {
    const { data: api } = await unkey.apis.createApi({ name: "sdk-updates" });
    const { data: created } = await unkey.keys.createKey({ apiId: api.apiId, credits: { remaining: 5 } });
    const { data: credits } = await unkey.keys.updateCredits({
      keyId: created.keyId,
      operation: "increment",
      value: 3,
    });
    expect(credits.remaining).toBe(8);
    await unkey.keys.updateKey({ keyId: created.keyId, enabled: false });
    expect((await unkey.keys.verifyKey({ key: created.key })).data.code).toBe("DISABLED");

    const missing = await unkey.keys.getKey({ keyId: "key_doesNotExist000" }).catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(NotFoundErrorResponse);
    expect((missing as NotFoundErrorResponse).statusCode).toBe(404);
  });

  it("checks rate limits and overrides through the ratelimit client", async () => {
    const check = { namespace: "sdk-sms", identifier: "user_1", limit: 1, duration: 60_000 };
    expect((await unkey.ratelimit.limit(check)).data).toMatchObject({ success: true, remaining: 0 });
    expect((await unkey.ratelimit.limit(check)).data.success).toBe(false);
    const { data: override } = await unkey.ratelimit.setOverride({
      namespace: "sdk-sms",
      identifier: "user_*",
      limit: 5,
      duration: 60_000,
    });
    expect((await unkey.ratelimit.limit(check)).data).toMatchObject({ success: true, limit: 5 });
    const { data: got } = await unkey.ratelimit.getOverride({ namespace: "sdk-sms", identifier: "user_*" });
    expect(got.overrideId).toBe(override.overrideId);
  });

  it("manages identities, permissions and roles, and verifies a permission query", async () => {
    const { data: identity } = await unkey.identities.createIdentity({ externalId: "sdk_org_1" });
    expect((await unkey.identities.getIdentity({ identity: "sdk_org_1" })).data.id).toBe(identity.identityId);

    await unkey.permissions.createPermission({ name: "documents.read", slug: "documents.read" });
    await unkey.permissions.createRole({ name: "reader", permissions: ["documents.read"] });
    const { data: api } = await unkey.apis.createApi({ name: "sdk-rbac" });
    const { data: key } = await unkey.keys.createKey({ apiId: api.apiId });
    await unkey.keys.addRoles({ keyId: key.keyId, roles: ["reader"] });
    expect((await unkey.keys.verifyKey({ key: key.key, permissions: "documents.read" })).data.valid).toBe(
      true,
    );
    expect((await unkey.keys.verifyKey({ key: key.key, permissions: "documents.write" })).data.code).toBe(
      "INSUFFICIENT_PERMISSIONS",
    );

    await unkey.identities.deleteIdentity({ identity: "sdk_org_1" });
    const gone = await unkey.identities.getIdentity({ identity: "sdk_org_1" }).catch((err: unknown) => err);
    expect(gone).toBeInstanceOf(NotFoundErrorResponse);
  });

  it("verifies a key with an IP allow-list unchanged, and reads Latchkey's FORBIDDEN_IP when an address is sent", async () => {
    const { data: api } = await unkey.apis.createApi({ name: "sdk-allow-list" });
    // The SDK knows no ipAllowList: set it through the API itself.
    const created = await stack.call("keys.createKey", { apiId: api.apiId, ipAllowList: ["203.0.113.0/24"] });
    expect(created.status).toBe(200);
    const key: string = created.body.data.key;
    // The SDK sends no address: allow-lists are not checked, and the key verifies as before.
    expect((await unkey.keys.verifyKey({ key })).data).toMatchObject({ valid: true, code: "VALID" });
    // A caller that adds ipAddress (here through the SDK's own request hook) gets the code the SDK does
    // not know: its open enum passes it through as the string, with valid false.
    const withAddress = (ipAddress: string) =>
      new Unkey({
        rootKey: stack.rootKey,
        serverURL: stack.gateway.url,
        retryConfig: { strategy: "none" },
        httpClient: new HTTPClient().addHook("beforeRequest", async (req) => {
          if (!req.url.endsWith("/v2/keys.verifyKey")) return req;
          const body = { ...((await req.clone().json()) as object), ipAddress };
          return new Request(req, { body: JSON.stringify(body) });
        }),
      });
    expect((await withAddress("198.51.100.1").keys.verifyKey({ key })).data).toMatchObject({
      valid: false,
      code: "FORBIDDEN_IP",
    });
    expect((await withAddress("203.0.113.77").keys.verifyKey({ key })).data).toMatchObject({
      valid: true,
      code: "VALID",
    });
  });
});
