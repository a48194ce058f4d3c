import { randomBytes } from "node:crypto";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys } from "../testing/in-memory-keys.ts";
import type { KeyLookup } from "./store/keys-store.ts";

/**
 * One workspace does its worst with what every workspace shares in a keys
 * instance, and another is still served as before: each test counts the
 * victim's work, which must not change (docs/security.md, "Shared resources,
 * per tenant").
 */

const VICTIM = "ws_victim";
const ATTACKER = "ws_attacker";

describe("the key cache, shared by workspaces", () => {
  it("keeps a workspace's cached keys while another verifies random strings, caches far more keys than its share and deletes APIs: 0 lookups of the victim's", async () => {
    const m = memoryKeys({ cacheSize: 1_000 });
    const lookups = new Map<string, number>();
    const find = m.deps.store.findKeysByHash.bind(m.deps.store);
    m.deps.store.findKeysByHash = (wanted: readonly KeyLookup[]) => {
      for (const l of wanted) lookups.set(l.workspaceId, (lookups.get(l.workspaceId) ?? 0) + 1);
      return find(wanted);
    };
    const victimApi = await m.seed.api(VICTIM);
    const victimKeys = await Promise.all(
      Array.from({ length: 200 }, () => m.seed.key({ apiId: victimApi, workspaceId: VICTIM })),
    );
    const victim = callerOf(VICTIM, "api.*.verify_key");
    const attacker = callerOf(ATTACKER, "*");
    const verifyAll = async (caller: typeof victim, keys: readonly string[]) => {
      const res = await m.client.verifyKeyBatch({
        callers: [caller],
        items: keys.map((key) => ({ callerIndex: 0, request: { key } })),
      });
      return res.results.map((r) => (r.result.case === "response" ? r.result.value.code : undefined));
    };
    const victimVerifies = async () => {
      const codes = await verifyAll(
        victim,
        victimKeys.map((k) => k.key),
      );
      expect(codes.filter((c) => c === VerifyCode.VALID)).toHaveLength(200);
    };
    await victimVerifies();
    const warm = lookups.get(VICTIM);
    expect(warm).toBe(200);

    // Random strings: every one a miss, looked up and cached as one.
    for (let round = 0; round < 20; round++) {
      const strings = Array.from({ length: 500 }, () => `lk_${randomBytes(16).toString("hex")}`);
      const codes = await verifyAll(attacker, strings);
      expect(codes.every((c) => c === VerifyCode.NOT_FOUND)).toBe(true);
      if (round % 5 === 0) await victimVerifies();
    }
    // Far more keys than its share (half of 1,000), each verified.
    const attackerApi = await m.seed.api(ATTACKER);
    for (let round = 0; round < 3; round++) {
      const keys = await Promise.all(
        Array.from({ length: 500 }, () => m.seed.key({ apiId: attackerApi, workspaceId: ATTACKER })),
      );
      const codes = await verifyAll(
        attacker,
        keys.map((k) => k.key),
      );
      expect(codes.filter((c) => c === VerifyCode.VALID)).toHaveLength(500);
      await victimVerifies();
    }
    // Deleting an API drops the attacker's own cached keys, not the victim's.
    for (let i = 0; i < 20; i++) {
      const { apiId } = await m.client.createApi({ caller: attacker, name: `churn ${i}` });
      await m.client.deleteApi({ caller: attacker, apiId });
    }
    await victimVerifies();

    expect(lookups.get(VICTIM)).toBe(warm);
    expect(lookups.get(ATTACKER)).toBe(10_000 + 1_500);
    expect(m.deps.keyCache.held(VICTIM).keys).toBe(200);
  }, 60_000);
});
