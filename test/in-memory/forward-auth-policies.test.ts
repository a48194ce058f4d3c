import { listen } from "@latchkey/gateway";
import { hashKey } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inMemoryStack } from "../testing/in-memory-stack.ts";

// Policies managed through forwardAuth.*Policy, enforced by the forward-auth endpoint of the same
// process: a change takes effect on the next request (the keys service's announcement drops the
// gateway's compiled policies before the operation answers).
describe("forward-auth with policies managed through the API", () => {
  const { gateway, keysDeps, rootKey } = inMemoryStack("fa_policies", {
    gateway: { trustedProxies: "127.0.0.1" },
  });
  let server: Awaited<ReturnType<typeof listen>>;
  let apiId: string;
  let key: string;
  let proxyKey: string;

  const call = async (operation: string, body: unknown) => {
    const res = await fetch(`http://127.0.0.1:${server.port}/v2/${operation}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const data = async (operation: string, body: unknown) => {
    const res = await call(operation, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  };
  const ask = async (uri: string) => {
    const res = await fetch(`http://127.0.0.1:${server.port}/forward-auth`, {
      headers: {
        "x-latchkey-root-key": proxyKey,
        "x-forwarded-uri": uri,
        "x-forwarded-method": "GET",
        "x-forwarded-host": "api.example.com",
        authorization: `Bearer ${key}`,
      },
    });
    return {
      status: res.status,
      policy: res.headers.get("x-latchkey-policy"),
      answer: res.headers.get("x-latchkey-answer"),
    };
  };

  beforeAll(async () => {
    server = await listen(gateway, 0, "127.0.0.1");
    apiId = (await data("apis.createApi", { name: "fa-policies" })).apiId;
    key = (await data("keys.createKey", { apiId })).key;
    const plaintext = "lk_root_fa_policies_proxy_0123456789";
    keysDeps.store.putRootKey({
      id: "rk_fa_policies_proxy",
      workspaceId: "ws_fa_policies",
      permissions: ["forward_auth.*.verify", `api.${apiId}.verify_key`],
      revokedAt: null,
      hash: hashKey(plaintext),
    });
    proxyKey = plaintext;
  });
  afterAll(() => server.close());

  it("enforces a created policy at once, and refuses the next request once an update asks for a permission the key lacks", async () => {
    const none = await ask("/orders/1");
    expect([none.status, JSON.parse(none.answer!).code]).toEqual([403, "NO_POLICY"]);
    const { policyId } = await data("forwardAuth.createPolicy", {
      policy: { name: "orders", paths: ["/orders/**"], apiId },
    });
    expect(await ask("/orders/1")).toMatchObject({ status: 200, policy: "orders" });
    const updated = await data("forwardAuth.updatePolicy", {
      policyId,
      policy: { name: "orders", paths: ["/orders/**"], apiId, permissions: "orders.read" },
    });
    expect(updated.policy.permissions).toBe("orders.read");
    const refused = await ask("/orders/1");
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.answer!).code).toBe("INSUFFICIENT_PERMISSIONS");
    await data("forwardAuth.deletePolicy", { policyId });
    const gone = await ask("/orders/1");
    expect([gone.status, JSON.parse(gone.answer!).code]).toEqual([403, "NO_POLICY"]);
  });

  it("matches in the order the API sets, and moves a policy on reorder", async () => {
    const broad = await data("forwardAuth.createPolicy", {
      policy: { name: "broad", paths: ["/shop/**"], apiId },
    });
    await data("forwardAuth.createPolicy", {
      policy: { name: "narrow", paths: ["/shop/cart"], apiId },
      position: 1,
    });
    expect((await ask("/shop/cart")).policy).toBe("broad");
    await data("forwardAuth.updatePolicy", { policyId: broad.policyId, position: 1 });
    expect((await ask("/shop/cart")).policy).toBe("narrow");
    const list = await data("forwardAuth.listPolicies", {});
    expect(list.map((p: any) => [p.policy.name, p.position])).toEqual([
      ["narrow", 0],
      ["broad", 1],
    ]);
  });

  it("refuses 404 data/api_not_found, word for word, a policy naming an API missing or of another workspace, and stores nothing", async () => {
    await keysDeps.store.createApi({
      id: "api_fa_elsewhere",
      workspaceId: "ws_elsewhere",
      name: "theirs",
      createdAt: 0,
    });
    const before = await data("forwardAuth.listPolicies", {});
    const answers: unknown[] = [];
    for (const other of ["api_fa_missing", "api_fa_elsewhere"]) {
      const created = await call("forwardAuth.createPolicy", { policy: { name: "elsewhere", apiId: other } });
      const updated = await call("forwardAuth.updatePolicy", {
        policyId: before[0].policyId,
        policy: { ...before[0].policy, apiId: other },
      });
      answers.push([created.status, created.body.error], [updated.status, updated.body.error]);
    }
    expect(answers).toEqual(
      Array(4).fill([
        404,
        {
          title: "Not Found",
          detail: "The specified API was not found.",
          status: 404,
          type: "https://unkey.com/docs/errors/unkey/data/api_not_found",
        },
      ]),
    );
    expect(await data("forwardAuth.listPolicies", {})).toEqual(before);
  });

  it("refuses a definition the policy file would refuse, at its place in the body", async () => {
    const res = await call("forwardAuth.createPolicy", {
      policy: { name: "q", apiId, key: { from: "query" } },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([
      expect.objectContaining({
        location: "/body/policy/key/name",
        message: "a key read from a query needs the query's name",
      }),
    ]);
  });
});
