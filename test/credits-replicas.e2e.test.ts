import { GATEWAY_PROCESS } from "@latchkey/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Proc, type Stack, startProcess, startStack } from "./testing/process-stack.ts";

// Two gateways in front of two keys-service processes (each gateway sends its batches to both in turn), one
// PostgreSQL: every spend of a hot key is decided by whichever keys process the batch reached.
let stack: Stack;
let second: Proc;
beforeAll(async () => {
  const natsUrl = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";
  stack = await startStack({ keysInstances: 2, natsUrl });
  second = await startProcess("gateway-2", GATEWAY_PROCESS.entry, {
    DATABASE_URL: stack.db.url,
    NATS_URL: natsUrl,
    KEYS_URL: stack.keys.map((k) => k.url).join(","),
    RATELIMIT_URL: stack.ratelimit.url,
    IDENTITY_URL: stack.identity.url,
  });
}, 120_000);
afterAll(async () => {
  await second?.stop();
  await stack?.stop();
});

/** `n` verifications of `key` at once, alternating between the two gateways; their statuses and codes. */
async function verifyAtOnce(key: string, n: number) {
  const gateways = [stack.gateway.url, second.url];
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await fetch(`${gateways[i % 2]}/v2/keys.verifyKey`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${stack.rootKey}` },
        body: JSON.stringify({ key }),
      });
      const body = (await res.json()) as { data?: { code: string; credits?: number } };
      return { status: res.status, code: body.data?.code, credits: body.data?.credits };
    }),
  );
}

async function keyWithCredits(remaining: number) {
  const apiId = (await stack.call("apis.createApi", { name: "replicas" })).body.data.apiId;
  const created = await stack.call("keys.createKey", { apiId, credits: { remaining } });
  expect(created.status).toBe(200);
  return created.body.data as { key: string; keyId: string };
}

async function remainingOf(keyId: string): Promise<number> {
  const read = await stack.call("keys.getKey", { keyId });
  expect(read.status).toBe(200);
  return read.body.data.credits.remaining as number;
}

/** VerifyKeyBatch calls each keys process has served so far. */
async function batchesServed(): Promise<number[]> {
  return Promise.all(
    stack.keys.map(async (k) => {
      const text = await (await fetch(`${k.url}/metrics`)).text();
      const line =
        /^latchkey_rpc_duration_seconds_count\{[^}]*method="VerifyKeyBatch"[^}]*code="ok"[^}]*\} (\d+)/m.exec(
          text,
        );
      return Number(line?.[1] ?? 0);
    }),
  );
}

describe("credits across replicas (two gateways, two keys processes, one PostgreSQL)", () => {
  it("spends exactly 100 of 1,000 concurrent verifications of a 100-credit key: 100 VALID, 900 USAGE_EXCEEDED", async () => {
    const { key, keyId } = await keyWithCredits(100);
    const before = await batchesServed();
    const results = await verifyAtOnce(key, 1_000);
    const after = await batchesServed();
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(results.filter((r) => r.code === "VALID")).toHaveLength(100);
    expect(results.filter((r) => r.code === "USAGE_EXCEEDED")).toHaveLength(900);
    // Each VALID answer names a balance left after it, each of 0 to 99 exactly once.
    const left = results
      .filter((r) => r.code === "VALID")
      .map((r) => r.credits)
      .sort((a, b) => a! - b!);
    expect(left).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(await remainingOf(keyId)).toBe(0);
    // Both keys processes decided spends of this key.
    expect(after[0]! - before[0]!).toBeGreaterThan(0);
    expect(after[1]! - before[1]!).toBeGreaterThan(0);
  });

  it("grants no spend twice and loses none when PostgreSQL drops the spend connections mid-statement", async () => {
    const { key, keyId } = await keyWithCredits(300);
    // The key's row held, so the keys processes' spend statements are out and waiting when their
    // connections are cut: a statement that did not commit must answer 503, never VALID.
    const holder = await stack.db.sql.reserve();
    let results: Awaited<ReturnType<typeof verifyAtOnce>>;
    let killed = 0;
    try {
      await holder`BEGIN`;
      await holder`SELECT 1 FROM keys WHERE id = ${keyId} FOR UPDATE`;
      const verifying = verifyAtOnce(key, 1_000);
      const waitingSpends = () => stack.db.sql<{ pid: number }[]>`SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%FOR UPDATE%'`;
      for (let i = 0; i < 100 && (await waitingSpends()).length < 2; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      for (const { pid } of await waitingSpends()) {
        const [row] = await stack.db.sql<{ ok: boolean }[]>`SELECT pg_terminate_backend(${pid}) AS ok`;
        if (row?.ok) killed++;
      }
      await holder`COMMIT`;
      results = await verifying;
    } finally {
      holder.release();
    }
    // Both keys processes had a statement waiting on the row, and both were cut.
    expect(killed).toBe(2);
    const valid = results.filter((r) => r.code === "VALID").length;
    const refused = results.filter((r) => r.code === "USAGE_EXCEEDED").length;
    const unavailable = results.filter((r) => r.status === 503).length;
    // The spends of the cut statements answered 503; every other answer is VALID or USAGE_EXCEEDED.
    expect(unavailable).toBeGreaterThan(0);
    expect(valid + refused + unavailable).toBe(1_000);
    // The credits taken are exactly those of the VALID answers, each balance answered once.
    expect(await remainingOf(keyId)).toBe(300 - valid);
    const left = results.filter((r) => r.code === "VALID").map((r) => r.credits);
    expect(new Set(left).size).toBe(valid);
    // USAGE_EXCEEDED only once every credit was gone.
    if (refused > 0) expect(valid).toBe(300);
    // Served again at once: the next verifications spend on the connections the processes opened anew.
    const after = await verifyAtOnce(key, 10);
    expect(after.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(await remainingOf(keyId)).toBe(
      Math.max(0, 300 - valid - after.filter((r) => r.code === "VALID").length),
    );
  });
});
