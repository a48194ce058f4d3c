import { randomBytes } from "node:crypto";
import { isGeneratedShape } from "@latchkey/gateway/auth";
import { createRootKey, ensureRootKey } from "@latchkey/keys";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { holdToContract, type Stack, startStack } from "./testing/process-stack.ts";

// The gateway behind a proxy on loopback it trusts: a request without X-Forwarded-For is the
// loopback client's own, one with it is the client it names (gateway/src/client-address.ts).
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ env: { gateway: { TRUSTED_PROXIES: "127.0.0.1/32" } } });
  // The stack's own root key, looked up before any flood (its refreshes are never budgeted).
  expect((await stack.call("apis.createApi", { name: "before-the-flood" })).status).toBe(200);
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

async function post(operation: string, body: unknown, rootKey: string, forwardedFor?: string) {
  const res = await fetch(`${stack.gateway.url}/v2/${operation}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${rootKey}`,
      ...(forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor }),
    },
    body: JSON.stringify(body),
  });
  const parsed = await res.json();
  holdToContract(operation, res.status, parsed);
  return { status: res.status, body: parsed as { error?: { detail: string } } };
}

/**
 * 16 loops, each sending keys.verifyKey with a new bogus root key as soon as the last is
 * answered, until stopped; counts the answers. Bounded: it stops itself after 60 s.
 */
function flood(token: () => string, forwardedFor?: string) {
  const statuses: Record<number, number> = {};
  let answered = 0;
  let running = true;
  const started = Date.now();
  const loop = async () => {
    while (running && Date.now() - started < 60_000) {
      const res = await fetch(`${stack.gateway.url}/v2/keys.verifyKey`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${token()}`,
          ...(forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor }),
        },
        body: '{"key":"sk_flood"}',
      });
      await res.arrayBuffer();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      answered++;
    }
  };
  const loops = Array.from({ length: 16 }, loop);
  return {
    /** Waits until the flood has had `n` answers, so the budgets it can reach are spent. */
    async answered(n: number) {
      const deadline = Date.now() + 60_000;
      while (answered < n) {
        if (Date.now() > deadline) throw new Error(`the flood had ${answered} answers in 60 s`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async stop() {
      running = false;
      await Promise.all(loops);
      return { statuses, seconds: (Date.now() - started) / 1_000 };
    },
  };
}

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** A bogus root key of no generated shape, and one forged in it: the base58 of 24 random bytes. */
const bogus = () => `bogus_root_${randomBytes(24).toString("hex")}`;
function forged(): string {
  const bytes = randomBytes(24);
  let n = BigInt(`0x${bytes.toString("hex")}`);
  let digits = "";
  for (; n > 0n; n /= 58n) digits = BASE58[Number(n % 58n)] + digits;
  for (let i = 0; i < bytes.length && bytes[i] === 0; i++) digits = `1${digits}`;
  return `lk_root_${digits}`;
}

describe("new root keys during a flood of distinct bogus root keys", () => {
  it("serves three root keys created during the flood from the same client, each 200 (the reserve for the generated shape)", async () => {
    const f = flood(bogus);
    await f.answered(500);
    const served: number[] = [];
    for (let i = 0; i < 3; i++) {
      const { rootKey } = await createRootKey(stack.db.sql, { permissions: ["*"], name: `fresh-${i}` });
      served.push((await post("apis.createApi", { name: `during-flood-${i}` }, rootKey)).status);
      await f.answered(1_000 * (i + 2));
    }
    const { statuses, seconds } = await f.stop();
    expect(served).toEqual([200, 200, 200]);
    // The flood was refused, never served nor failed; its lookups were its own budget: 20 at
    // once and 20 a second.
    expect(Object.keys(statuses).sort()).toEqual(["401", "503"]);
    expect(statuses[401]).toBeGreaterThanOrEqual(20);
    expect(statuses[401]).toBeLessThanOrEqual(20 + 20 * Math.ceil(seconds));
  }, 120_000);

  it("serves root keys created during a flood forged in the generated shape, from another client behind the trusted proxy, each 200", async () => {
    expect(Array.from({ length: 100 }, () => isGeneratedShape(forged()))).toEqual(Array(100).fill(true));
    const f = flood(forged, "203.0.113.7");
    await f.answered(500);
    const served: [number, string | undefined][] = [];
    for (let i = 0; i < 3; i++) {
      const { rootKey } = await createRootKey(stack.db.sql, { permissions: ["*"], name: `behind-${i}` });
      const res = await post("apis.createApi", { name: `behind-proxy-${i}` }, rootKey, "198.51.100.7");
      served.push([res.status, res.body.error?.detail]);
      await f.answered(1_000 * (i + 2));
    }
    // A root key of the operator's own shape (LATCHKEY_ROOT_KEY) has its client's own budget.
    const own = `operators-own-root-key-${randomBytes(8).toString("hex")}`;
    await ensureRootKey(stack.db.sql, own);
    const ownAnswer = await post("apis.createApi", { name: "operators-own" }, own, "198.51.100.8");
    // The flooder's own client gets nothing more for claiming another address before the proxy's hop.
    const spoofed = await post("apis.createApi", { name: "spoofed" }, forged(), "198.51.100.9, 203.0.113.7");
    const { statuses, seconds } = await f.stop();
    expect(served).toEqual([
      [200, undefined],
      [200, undefined],
      [200, undefined],
    ]);
    expect(ownAnswer.status).toBe(200);
    expect(spoofed.status).toBe(503);
    expect(spoofed.body.error?.detail).toBe(
      "Too many unknown root keys are being checked for this client; retry shortly.",
    );
    // Forged, the flood has its own budget and its share of the reserve: 25 at once, 25 a second.
    expect(Object.keys(statuses).sort()).toEqual(["401", "503"]);
    expect(statuses[401]).toBeGreaterThanOrEqual(25);
    expect(statuses[401]).toBeLessThanOrEqual(25 + 25 * Math.ceil(seconds));
  }, 120_000);
});
