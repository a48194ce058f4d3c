import { ownRedis } from "@latchkey/ratelimit/testing/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Proc, type Stack, startProcess, startStack } from "./testing/process-stack.ts";

// The ratelimit service counting in a Redis of this test's own (RATELIMIT_STORE=redis), which the
// test stops and starts: verifications follow keys' RATELIMIT_FAIL_OPEN meanwhile, nothing waits
// past its deadline, and counting resumes once Redis is back, with no process restarted.
let redis: Awaited<ReturnType<typeof ownRedis>>;
let stack: Stack;
/** A keys service that fails closed, and a gateway in front of it. */
let closedKeys: Proc;
let closedGateway: Proc;
const REDIS_TIMEOUT = 200;
/** Scheduling on a shared 2-core machine: what an answer may take beyond the work itself. */
const MARGIN = 1_500;

beforeAll(async () => {
  redis = await ownRedis();
  stack = await startStack({
    env: {
      ratelimit: {
        RATELIMIT_STORE: "redis",
        REDIS_URL: redis.url,
        RATELIMIT_REDIS_TIMEOUT_MS: String(REDIS_TIMEOUT),
        RATELIMIT_REDIS_PREFIX: `e2e:${Date.now()}:`,
      },
    },
  });
  closedKeys = await startProcess("keys-fail-closed", "services/keys/src/main.ts", {
    DATABASE_URL: stack.db.url,
    RATELIMIT_URL: stack.ratelimit.url,
    IDENTITY_URL: stack.identity.url,
    RATELIMIT_FAIL_OPEN: "false",
  });
  closedGateway = await startProcess("gateway-fail-closed", "gateway/src/main.ts", {
    DATABASE_URL: stack.db.url,
    KEYS_URL: closedKeys.url,
    RATELIMIT_URL: stack.ratelimit.url,
    IDENTITY_URL: stack.identity.url,
  });
}, 120_000);

afterAll(async () => {
  await closedGateway?.stop();
  await closedKeys?.stop();
  await stack?.stop();
  await redis?.stop();
});

async function timed<T>(call: Promise<T>): Promise<{ answer: T; ms: number }> {
  const started = performance.now();
  const answer = await call;
  return { answer, ms: performance.now() - started };
}

const verifyClosed = (key: string) =>
  fetch(`${closedGateway.url}/v2/keys.verifyKey`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${stack.rootKey}` },
    body: JSON.stringify({ key }),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

async function keyWithLimit(limit: number): Promise<string> {
  const apiId = (await stack.call("apis.createApi", { name: `redis-${limit}-${Math.random()}` })).body.data
    .apiId;
  return (
    await stack.call("keys.createKey", {
      apiId,
      ratelimits: [{ name: "requests", limit, duration: 3_600_000, autoApply: true }],
    })
  ).body.data.key;
}

describe("ratelimit on Redis, through the gateway", () => {
  it("counts standalone limits and named limits in Redis while it is up", async () => {
    const body = { namespace: "redis-e2e", identifier: "u", limit: 2, duration: 3_600_000 };
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await stack.call("ratelimit.limit", body));
    expect(answers.map((a) => [a.status, a.body.data.success, a.body.data.remaining])).toEqual([
      [200, true, 1],
      [200, true, 0],
      [200, false, 0],
    ]);
    const key = await keyWithLimit(1);
    const codes = [];
    for (let i = 0; i < 2; i++) codes.push((await stack.call("keys.verifyKey", { key })).body.data.code);
    expect(codes).toEqual(["VALID", "RATE_LIMITED"]);
  });

  it("while Redis is stopped: verifications pass with RATELIMIT_FAIL_OPEN=true and answer 503 with false, limits answer 503, each at once; after it starts, counting resumes", async () => {
    const open = await keyWithLimit(1);
    const closed = await keyWithLimit(1);
    await redis.stop();

    const failOpen = await timed(stack.call("keys.verifyKey", { key: open }));
    expect(failOpen.answer.status).toBe(200);
    expect(failOpen.answer.body.data).toMatchObject({ valid: true, code: "VALID" });
    expect(failOpen.ms).toBeLessThan(REDIS_TIMEOUT + MARGIN);

    const failClosed = await timed(verifyClosed(closed));
    expect(failClosed.answer.status).toBe(503);
    expect(failClosed.answer.body.error).toMatchObject({
      status: 503,
      title: "Service Unavailable",
      detail: "A service behind the gateway is unavailable; retry shortly.",
    });
    expect(failClosed.ms).toBeLessThan(REDIS_TIMEOUT + MARGIN);

    const limit = await timed(
      stack.call("ratelimit.limit", {
        namespace: "redis-e2e",
        identifier: "down",
        limit: 5,
        duration: 60_000,
      }),
    );
    expect(limit.answer.status).toBe(503);
    expect(limit.answer.body.error).toMatchObject({ status: 503, title: "Service Unavailable" });
    expect(limit.ms).toBeLessThan(REDIS_TIMEOUT + MARGIN);

    await redis.start();
    const back = performance.now();
    let answer: { status: number; body: any } | undefined;
    while (performance.now() - back < 10_000) {
      answer = await verifyClosed(closed);
      if (answer.status === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(answer?.body.data).toMatchObject({ valid: true, code: "VALID" });
    expect(performance.now() - back).toBeLessThan(3_000 + MARGIN);
    // Counted again: the key's limit of 1 is spent.
    expect((await verifyClosed(closed)).body.data.code).toBe("RATE_LIMITED");
  });
});
