import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./testing/process-stack.ts";

// Two keys-service processes behind one gateway, caches invalidated through NATS.
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    keysInstances: 2,
    natsUrl: process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222",
  });
});
afterAll(async () => {
  await stack?.stop();
});

/** Sequential verifications: the gateway sends its batches to the two instances in turn, so both answer. */
async function verifyOnBoth(key: string) {
  const codes: string[] = [];
  for (let i = 0; i < 4; i++) codes.push((await stack.call("keys.verifyKey", { key })).body.data.code);
  return codes;
}

async function freshKey(extra: Record<string, unknown> = {}) {
  const apiId = (await stack.call("apis.createApi", { name: "propagation" })).body.data.apiId;
  const created = await stack.call("keys.createKey", { apiId, ...extra });
  expect(created.status).toBe(200);
  // Warm both instances' caches.
  expect(await verifyOnBoth(created.body.data.key)).toEqual(["VALID", "VALID", "VALID", "VALID"]);
  return created.body.data as { key: string; keyId: string };
}

describe("a change to a key applies to the very next verification on every keys-service instance", () => {
  it("disabling", async () => {
    const { key, keyId } = await freshKey();
    expect((await stack.call("keys.updateKey", { keyId, enabled: false })).status).toBe(200);
    expect(await verifyOnBoth(key)).toEqual(["DISABLED", "DISABLED", "DISABLED", "DISABLED"]);
    expect((await stack.call("keys.updateKey", { keyId, enabled: true })).status).toBe(200);
    expect(await verifyOnBoth(key)).toEqual(["VALID", "VALID", "VALID", "VALID"]);
  });

  it("expiry", async () => {
    const { key, keyId } = await freshKey();
    expect((await stack.call("keys.updateKey", { keyId, expires: Date.now() - 1 })).status).toBe(200);
    expect(await verifyOnBoth(key)).toEqual(["EXPIRED", "EXPIRED", "EXPIRED", "EXPIRED"]);
  });

  it("deletion", async () => {
    const { key, keyId } = await freshKey();
    expect((await stack.call("keys.deleteKey", { keyId })).status).toBe(200);
    expect(await verifyOnBoth(key)).toEqual(["NOT_FOUND", "NOT_FOUND", "NOT_FOUND", "NOT_FOUND"]);
  });

  it("credits", async () => {
    const { key, keyId } = await freshKey({ credits: { remaining: 100 } });
    const set = await stack.call("keys.updateCredits", { keyId, operation: "set", value: 2 });
    expect(set.status).toBe(200);
    expect(set.body.data.remaining).toBe(2);
    expect(await verifyOnBoth(key)).toEqual(["VALID", "VALID", "USAGE_EXCEEDED", "USAGE_EXCEEDED"]);
  });

  it("deleting the API", async () => {
    const apiId = (await stack.call("apis.createApi", { name: "doomed" })).body.data.apiId;
    const { key } = (await stack.call("keys.createKey", { apiId })).body.data;
    expect(await verifyOnBoth(key)).toEqual(["VALID", "VALID", "VALID", "VALID"]);
    expect((await stack.call("apis.deleteApi", { apiId })).status).toBe(200);
    expect(await verifyOnBoth(key)).toEqual(["NOT_FOUND", "NOT_FOUND", "NOT_FOUND", "NOT_FOUND"]);
  });
});
