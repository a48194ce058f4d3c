import type { KeyVerified } from "@latchkey/proto/keys/v1/events_pb";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { hashKey } from "@latchkey/runtime";
import { keepingEventSink } from "@latchkey/runtime/testing/event-sink";
import { describe, expect, it } from "vitest";
import { callerOf, invalidAt, memoryKeys } from "../../testing/in-memory-keys.ts";
import { KEY_VERIFIED } from "../events.ts";
import type { MemoryKeysStore } from "../store/memory-keys-store.ts";

const admin = callerOf("ws_1", "*");
const verifier = callerOf("ws_1", "api.*.verify_key");

describe("verifyKey with IP allow-lists", () => {
  it("answers FORBIDDEN_IP outside a key's list, VALID inside it, and checks nothing without an address", async () => {
    const events = keepingEventSink();
    const { client, seed } = memoryKeys({ events });
    const apiId = await seed.api();
    const { key, keyId } = await seed.key({
      apiId,
      ipAllowList: ["203.0.113.0/24", "2001:db8::/32"],
      credits: 5,
    });
    const at = (clientIp?: string) =>
      client.verifyKey({ caller: verifier, key, ...(clientIp ? { clientIp } : {}) });
    expect((await at("203.0.113.9")).code).toBe(VerifyCode.VALID);
    expect((await at("2001:db8::5")).code).toBe(VerifyCode.VALID);
    const refused = await at("198.51.100.1");
    expect(refused).toMatchObject({ valid: false, code: VerifyCode.FORBIDDEN_IP, keyId });
    // A refused address spends no credits.
    expect(refused.credits).toBeUndefined();
    expect((await at()).credits).toBe(2n);
    expect(
      events.kept.filter((e) => e.subject === KEY_VERIFIED).map((e) => (e.message as KeyVerified).outcome),
    ).toEqual(["VALID", "VALID", "FORBIDDEN_IP", "VALID"]);
  });

  it("applies an API's list to each of its keys, narrowed by a key's own", async () => {
    const { client } = memoryKeys();
    const { apiId } = await client.createApi({ caller: admin, name: "office", ipAllowList: ["10.0.0.0/8"] });
    const plain = await client.createKey({ caller: admin, apiId });
    const narrow = await client.createKey({ caller: admin, apiId, ipAllowList: ["10.1.0.0/16"] });
    const code = async (key: string, clientIp: string) =>
      (await client.verifyKey({ caller: verifier, key, clientIp })).code;
    expect(await code(plain.key, "10.200.0.1")).toBe(VerifyCode.VALID);
    expect(await code(plain.key, "192.0.2.1")).toBe(VerifyCode.FORBIDDEN_IP);
    expect(await code(narrow.key, "10.1.9.9")).toBe(VerifyCode.VALID);
    expect(await code(narrow.key, "10.200.0.1")).toBe(VerifyCode.FORBIDDEN_IP);
    expect((await client.getApi({ caller: admin, apiId })).api?.ipAllowList).toEqual(["10.0.0.0/8"]);
  });

  it("takes a changed list at the next verification, and [] clears it", async () => {
    const { client, seed } = memoryKeys();
    const { key, keyId } = await seed.key({ apiId: await seed.api() });
    const code = async () => (await client.verifyKey({ caller: verifier, key, clientIp: "192.0.2.1" })).code;
    expect(await code()).toBe(VerifyCode.VALID);
    await client.updateKey({ caller: admin, keyId, ipAllowList: { values: ["198.51.100.0/24"] } });
    expect(await code()).toBe(VerifyCode.FORBIDDEN_IP);
    expect((await client.getKey({ caller: admin, keyId })).key?.ipAllowList).toEqual(["198.51.100.0/24"]);
    await client.updateKey({ caller: admin, keyId, ipAllowList: { values: [] } });
    expect(await code()).toBe(VerifyCode.VALID);
  });

  it("refuses an address that is not one, and a list entry that is no CIDR, as input to fix", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const { key } = await seed.key({ apiId });
    expect(await invalidAt(client.verifyKey({ caller: verifier, key, clientIp: "10.1" }))).toEqual({
      location: "/ipAddress",
      message: "ipAddress must be an IPv4 or IPv6 address",
    });
    expect(
      (await invalidAt(client.createKey({ caller: admin, apiId, ipAllowList: ["10.0.0.0/40"] }))).location,
    ).toBe("/ipAllowList/0");
  });

  it("parses a key's list once per cached record, not per verification", async () => {
    const { client, seed, deps } = memoryKeys();
    const { key } = await seed.key({ apiId: await seed.api(), ipAllowList: ["203.0.113.0/24"] });
    await client.verifyKey({ caller: verifier, key, clientIp: "203.0.113.1" });
    const store = deps.store as MemoryKeysStore;
    let lookups = 0;
    const original = store.findKeysByHash.bind(store);
    store.findKeysByHash = (l) => {
      lookups++;
      return original(l);
    };
    const cached = deps.keyCache.peek("ws_1", hashKey(key));
    for (let i = 0; i < 20; i++) await client.verifyKey({ caller: verifier, key, clientIp: "203.0.113.1" });
    expect(lookups).toBe(0);
    // The same parsed list on the same cached record.
    expect(deps.keyCache.peek("ws_1", hashKey(key))?.allowList).toBe(cached?.allowList);
  });
});
