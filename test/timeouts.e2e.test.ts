import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Proc, type Stack, startProcess, startStack } from "./testing/process-stack.ts";

// A service that accepts connections and never answers (stuck, or a partition that drops packets)
// must cost a request its deadline, not forever, and must not stop the gateway serving the rest.
let hold: net.Server;
let held: string;
const holding = new Set<net.Socket>();
let stack: Stack;
/** A second gateway whose keys service is the one that never answers. */
let stuckKeys: Proc;
/** A keys service whose identity service never answers, on the stack's database, and a gateway in front of it. */
let keysStuckIdentity: Proc;
let viaStuckIdentity: Proc;
const GATEWAY_DEADLINE = 1_000;
const KEYS_DEADLINE = 400;
/** Scheduling on a shared 2-core machine, process start-up of nothing: what a deadline may overrun by. */
const MARGIN = 1_500;

beforeAll(async () => {
  hold = net.createServer((socket) => {
    holding.add(socket);
    socket.resume(); // reads every request, answers none
    socket.on("error", () => {});
    socket.on("close", () => holding.delete(socket));
  });
  await new Promise<void>((resolve) => hold.listen(0, "127.0.0.1", resolve));
  held = `http://127.0.0.1:${(hold.address() as net.AddressInfo).port}`;
  stack = await startStack({
    env: {
      gateway: {
        RATELIMIT_URL: held,
        ANALYTICS_URL: held,
        RPC_TIMEOUT_MS: String(GATEWAY_DEADLINE),
        ANALYTICS_RPC_TIMEOUT_MS: String(GATEWAY_DEADLINE),
      },
      keys: { RATELIMIT_URL: held, RPC_TIMEOUT_MS: String(KEYS_DEADLINE) },
    },
  });
  stuckKeys = await startProcess("gateway-stuck-keys", "gateway/src/main.ts", {
    KEYS_URL: held,
    RATELIMIT_URL: stack.ratelimit.url,
    IDENTITY_URL: stack.identity.url,
    RPC_TIMEOUT_MS: String(GATEWAY_DEADLINE),
  });
  keysStuckIdentity = await startProcess("keys-stuck-identity", "services/keys/src/main.ts", {
    DATABASE_URL: stack.db.url,
    IDENTITY_URL: held,
    RATELIMIT_URL: stack.ratelimit.url,
    RPC_TIMEOUT_MS: String(KEYS_DEADLINE),
  });
  viaStuckIdentity = await startProcess("gateway-keys-stuck-identity", "gateway/src/main.ts", {
    KEYS_URL: keysStuckIdentity.url,
    RATELIMIT_URL: stack.ratelimit.url,
    IDENTITY_URL: stack.identity.url,
    RPC_TIMEOUT_MS: String(GATEWAY_DEADLINE),
  });
}, 90_000);

afterAll(async () => {
  await viaStuckIdentity?.stop();
  await keysStuckIdentity?.stop();
  await stuckKeys?.stop();
  await stack?.stop();
  for (const socket of holding) socket.destroy();
  await new Promise<void>((resolve) => hold?.close(() => resolve()));
});

async function timed<T>(call: Promise<T>): Promise<{ answer: T; ms: number }> {
  const started = performance.now();
  const answer = await call;
  return { answer, ms: performance.now() - started };
}

function expectUnavailable(res: { status: number; body: any }) {
  expect(res.status).toBe(503);
  expect(res.body).toEqual({
    meta: { requestId: expect.stringMatching(/^req_/) },
    error: {
      title: "Service Unavailable",
      detail: "A service behind the gateway did not answer in time; retry shortly.",
      status: 503,
      type: "https://unkey.com/docs/errors/unkey/application/service_unavailable",
    },
  });
}

describe("a service that never answers", () => {
  it("costs a ratelimit.limit its deadline: 503 in the error shape, within RPC_TIMEOUT_MS and a margin", async () => {
    const { answer, ms } = await timed(
      stack.call("ratelimit.limit", { namespace: "stuck", identifier: "u", limit: 5, duration: 60_000 }),
    );
    expectUnavailable(answer);
    expect(ms).toBeGreaterThanOrEqual(GATEWAY_DEADLINE - 50);
    expect(ms).toBeLessThan(GATEWAY_DEADLINE + MARGIN);
  });

  it("costs analytics queries their deadline while every other operation is answered at once", async () => {
    let heldAnswered = false;
    const queries = Promise.all(
      Array.from({ length: 4 }, () =>
        timed(
          stack.call("analytics.getVerifications", { query: "SELECT count(*) FROM key_verifications_v1" }),
        ),
      ),
    ).finally(() => {
      heldAnswered = true;
    });
    const apiId = (await stack.call("apis.createApi", { name: "meanwhile" })).body.data.apiId;
    const { key } = (await stack.call("keys.createKey", { apiId })).body.data;
    const verified = await stack.call("keys.verifyKey", { key });
    expect(verified.body.data.code).toBe("VALID");
    expect(heldAnswered, "answered before the held queries' deadline").toBe(false);
    for (const { answer, ms } of await queries) {
      expectUnavailable(answer);
      expect(ms).toBeLessThan(GATEWAY_DEADLINE + MARGIN);
    }
  });

  it("lets a verification through when keys' own call to ratelimit passes its deadline (RATELIMIT_FAIL_OPEN)", async () => {
    const apiId = (await stack.call("apis.createApi", { name: "fail-open" })).body.data.apiId;
    const { key } = (
      await stack.call("keys.createKey", {
        apiId,
        ratelimits: [{ name: "requests", limit: 1, duration: 60_000, autoApply: true }],
      })
    ).body.data;
    const { answer, ms } = await timed(stack.call("keys.verifyKey", { key }));
    expect(answer.status).toBe(200);
    expect(answer.body.data).toMatchObject({ valid: true, code: "VALID" });
    // keys gave up on ratelimit at its own deadline, well before the gateway's.
    expect(ms).toBeGreaterThanOrEqual(KEYS_DEADLINE - 50);
    expect(ms).toBeLessThan(GATEWAY_DEADLINE);
  });

  it("answers 503, not 500, when keys' own call to identity passes its deadline during a verification", async () => {
    // Seeded through the stack, whose keys reaches identity; verified through the keys whose identity never answers,
    // which has none of the key's roles cached and must ask for them.
    const apiId = (await stack.call("apis.createApi", { name: "stuck-identity" })).body.data.apiId;
    expect((await stack.call("permissions.createRole", { name: "reader" })).status).toBe(200);
    const { key, keyId } = (await stack.call("keys.createKey", { apiId })).body.data;
    expect((await stack.call("keys.addRoles", { keyId, roles: ["reader"] })).status).toBe(200);
    const { answer, ms } = await timed(
      fetch(`${viaStuckIdentity.url}/v2/keys.verifyKey`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${stack.rootKey}` },
        body: JSON.stringify({ key }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error: unknown } })),
    );
    expect(answer.status).toBe(503);
    expect(answer.body.error).toMatchObject({
      status: 503,
      title: "Service Unavailable",
      type: "https://unkey.com/docs/errors/unkey/application/service_unavailable",
    });
    // keys gave up on identity at its own deadline, before the gateway's.
    expect(ms).toBeGreaterThanOrEqual(KEYS_DEADLINE - 50);
    expect(ms).toBeLessThan(GATEWAY_DEADLINE + MARGIN);
  });

  it("costs every verification its deadline when it is the keys service, and the gateway stays alive", async () => {
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        timed(
          fetch(`${stuckKeys.url}/v2/keys.verifyKey`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${stack.rootKey}` },
            body: JSON.stringify({ key: "sk_anything" }),
          }).then(async (r) => ({ status: r.status, body: await r.json() })),
        ),
      ),
    );
    for (const { answer, ms } of answers) {
      expectUnavailable(answer);
      expect(ms).toBeLessThan(GATEWAY_DEADLINE + MARGIN);
    }
    expect((await fetch(`${stuckKeys.url}/healthz`)).status).toBe(200);
  });
});
