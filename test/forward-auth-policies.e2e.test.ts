import { createRootKey } from "@latchkey/keys";
import { GATEWAY_PROCESS } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeProxy, recordingUpstream, startNginx } from "./testing/edge-proxies.ts";
import { type Proc, type Stack, startProcess, startStack } from "./testing/process-stack.ts";

const NATS_URL = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";

// A policy managed through the API, enforced by real nginx in front of a real upstream. The
// gateway nginx asks is a process of its own, apart from the one the API is called through: the
// change reaches it as the keys service's announcement over NATS (docs/edge.md).
describe("forward-auth policies managed through the API, behind real nginx", () => {
  let stack: Stack;
  let gateway: Proc;
  let nginx: EdgeProxy;
  let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
  let apiId: string;

  const data = async (operation: string, body: unknown) => {
    const res = await stack.call(operation, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  };

  beforeAll(async () => {
    stack = await startStack({ natsUrl: NATS_URL });
    apiId = (await data("apis.createApi", { name: "edge-policies" })).apiId;
    const proxyKey = await createRootKey(stack.db.sql, {
      permissions: ["forward_auth.*.verify", `api.${apiId}.verify_key`],
      name: "edge proxy",
    });
    gateway = await startProcess("gateway-forward-auth-policies", GATEWAY_PROCESS.entry, {
      KEYS_URL: stack.keys[0]!.url,
      RATELIMIT_URL: stack.ratelimit.url,
      IDENTITY_URL: stack.identity.url,
      NATS_URL,
      METRICS_PORT: "0",
    });
    upstream = await recordingUpstream();
    nginx = await startNginx({
      latchkey: gateway.url.slice("http://".length),
      rootKey: proxyKey.rootKey,
      upstream: `127.0.0.1:${upstream.port}`,
    });
  }, 120_000);

  afterAll(async () => {
    await nginx?.stop();
    await upstream?.close();
    await gateway?.stop();
    await stack?.stop();
  });

  let marks = 0;
  async function through(path: string, key: string) {
    const mark = `p${++marks}`;
    const res = await fetch(`${nginx.url}${path}`, {
      headers: { authorization: `Bearer ${key}`, "x-test-mark": mark },
    });
    await res.text();
    return {
      status: res.status,
      reached: upstream.received.filter((r) => r.headers["x-test-mark"] === mark).length,
    };
  }

  it("lets a key through once a policy is created, and refuses it once an update asks for a permission it lacks", async () => {
    const { key } = await data("keys.createKey", { apiId });
    expect(await through("/reports/1", key)).toEqual({ status: 403, reached: 0 });
    const { policyId } = await data("forwardAuth.createPolicy", {
      policy: { name: "reports", paths: ["/reports/**"], apiId },
    });
    // The creation dropped the (empty) policies this gateway had loaded; within a NATS hop.
    const allowed = await settle(
      () => through("/reports/1", key),
      (r) => r.status === 200,
    );
    expect(allowed).toEqual({ status: 200, reached: 1 });
    await data("forwardAuth.updatePolicy", {
      policyId,
      policy: { name: "reports", paths: ["/reports/**"], apiId, permissions: "reports.read" },
    });
    const refused = await settle(
      () => through("/reports/1", key),
      (r) => r.status === 403,
    );
    expect(refused).toEqual({ status: 403, reached: 0 });
    // Stays refused: no compiled policy from before the change comes back.
    for (let i = 0; i < 5; i++) expect(await through("/reports/2", key)).toEqual({ status: 403, reached: 0 });
  });
});

/**
 * `ask` until `done` holds, for at most a second: the announcement crosses NATS to the other
 * process, which may take a moment after the operation answered; far under the policies' TTL.
 */
async function settle<T>(ask: () => Promise<T>, done: (r: T) => boolean): Promise<T> {
  const deadline = Date.now() + 1_000;
  let r = await ask();
  while (!done(r) && Date.now() < deadline) {
    await new Promise((res) => setTimeout(res, 20));
    r = await ask();
  }
  return r;
}
