import { createRootKey, createWorkspace } from "@latchkey/keys";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATIONS, type Operation, routes } from "../gateway/src/routes/index.ts";
import { analyticsOptions, type Stack, startStack } from "./testing/process-stack.ts";

/**
 * Every operation of the route table, driven with its example body (docs/openapi.json shows the
 * same) against the separate-process stack, ids filled in from earlier answers. The harness holds
 * every answer to the document: a field it does not promise, or a promised one missing, fails.
 */
const analytics = analyticsOptions("openapi_e2e");
let stack: Stack;
let rootKey: string;
let workspace: string;

beforeAll(async () => {
  stack = await startStack({ ...analytics.options, webhooks: {}, portal: true });
  const created = await createWorkspace(stack.db.sql, `openapi-${analytics.suffix}`);
  rootKey = created.rootKey;
  workspace = created.workspaceId;
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  await analytics.drop();
});

/**
 * When an operation runs: what it needs created first, what takes it away last. The apis.
 * operations and createIdentity come before keys.createKey, whose example names the identity.
 */
function phase(operation: Operation): number {
  const method = operation.slice(operation.indexOf(".") + 1);
  if (operation === "apis.deleteApi") return 6;
  if (method.startsWith("delete")) return 5;
  if (method === "rerollKey") return 4;
  if (method.startsWith("remove")) return 3;
  if (operation === "keys.createKey") return 1;
  if (method.startsWith("create")) return 0;
  return 2;
}

/**
 * The operations a root key calls; the portal's session calls and its code exchange take a session or
 * a code instead (test/unkey-sdk-portal.e2e.test.ts drives them, and the 401 test below).
 */
const ORDER = OPERATIONS.filter((o) => routes[o].auth === undefined).sort((a, b) => phase(a) - phase(b));

/** What earlier answers made: the example's ids are replaced by these. */
const made: Record<string, string> = {};

function bodyOf(operation: Operation): unknown {
  const body = structuredClone(routes[operation].example) as unknown;
  if (Array.isArray(body) || body === null || typeof body !== "object") return body;
  const out = body as Record<string, unknown>;
  for (const field of ["apiId", "keyId", "key", "roleId", "webhookId", "portalId", "sessionId", "policyId"]) {
    if (field in out && made[field] !== undefined) out[field] = made[field];
  }
  // A forward-auth policy names an API of the workspace (the keys service refuses any other).
  const policy = out["policy"] as Record<string, unknown> | undefined;
  if (policy !== undefined && "apiId" in policy && made["apiId"] !== undefined)
    policy["apiId"] = made["apiId"];
  return out;
}

describe("every operation with its example body, answers held to docs/openapi.json", () => {
  it("runs the whole API once: 403 (404 where a resource is masked) to a root key without what it needs, then 200 to one with everything; every answer in its documented shape", async () => {
    const { rootKey: unrelated } = await createRootKey(stack.db.sql, {
      workspace,
      permissions: ["ratelimit.ns_unrelated.read_override"],
    });
    const refused: [Operation, number][] = [];
    const answered: [Operation, number][] = [];
    for (const operation of ORDER) {
      const refusal = await stack.call(operation, bodyOf(operation), unrelated);
      refused.push([operation, refusal.status]);
      if (operation === "keys.verifyKey")
        expect(refusal.body.data).toEqual({ valid: false, code: "NOT_FOUND" });
      const res = await stack.call(operation, bodyOf(operation), rootKey);
      answered.push([operation, res.status]);
      const data = res.body.data;
      if (operation === "apis.createApi") made["apiId"] = data.apiId;
      if (operation === "keys.createKey" || operation === "keys.rerollKey") {
        made["keyId"] = data.keyId;
        made["key"] = data.key;
      }
      if (operation === "permissions.createRole") made["roleId"] = data.roleId;
      if (operation === "webhooks.create") made["webhookId"] = data.webhookId;
      if (operation === "portals.createPortal") made["portalId"] = data.portalId;
      if (operation === "portal.createSession") made["sessionId"] = data.id;
      if (operation === "forwardAuth.createPolicy") made["policyId"] = data.policyId;
    }
    // keys.verifyKey masks as data: 200, valid false, NOT_FOUND (its rootKey.masked says so).
    expect(refused).toEqual(
      ORDER.map((o) => [o, o === "keys.verifyKey" ? 200 : routes[o].rootKey.masked ? 404 : 403]),
    );
    // Both spellings delete the same override: the second finds none (and its 404 is held to the document too).
    // webhooks.redeliver names the example's delivery, which does not exist: its 404 is held to the document.
    const missing = ["ratelimit.deleteOverride", "webhooks.redeliver"];
    expect(answered).toEqual(ORDER.map((o) => [o, missing.includes(o) ? 404 : 200]));
  }, 180_000);

  it("answers 401 to every operation without a root key, in the documented error shape", async () => {
    for (const operation of ORDER) {
      const res = await stack.call(operation, routes[operation].example, null);
      expect([operation, res.status, res.body.error.type]).toEqual([
        operation,
        401,
        "https://unkey.com/docs/errors/unkey/authentication/missing",
      ]);
    }
    // Without a session's cookie, or with a code no session has: 401 too.
    for (const operation of OPERATIONS.filter((o) => routes[o].auth !== undefined)) {
      const res = await stack.call(operation, routes[operation].example, null);
      expect([operation, res.status, res.body.error.type]).toEqual([
        operation,
        401,
        "https://unkey.com/docs/errors/unkey/authentication/key_not_found",
      ]);
    }
  });
});

describe("the gateway process serves its API reference", () => {
  it("serves /openapi.json, /openapi.yaml and /docs", async () => {
    const json = await fetch(`${stack.gateway.url}/openapi.json`);
    expect(json.status).toBe(200);
    expect(((await json.json()) as { openapi: string }).openapi).toBe("3.1.0");
    expect((await fetch(`${stack.gateway.url}/openapi.yaml`)).status).toBe(200);
    const docs = await fetch(`${stack.gateway.url}/docs`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect((await fetch(`${stack.gateway.url}/docs/scalar.js`)).status).toBe(200);
  });
});
