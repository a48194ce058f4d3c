import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys } from "../testing/in-memory-keys.ts";

const MiB = 1024 * 1024;

describe("the keys service's memory, bounded by bytes", () => {
  it("keeps the key cache under KEY_CACHE_MAX_BYTES while a tenant verifies keys carrying 512 KiB of meta each", async () => {
    const m = memoryKeys({ cacheMaxBytes: 8 * MiB });
    const apiId = await m.seed.api();
    const caller = callerOf("ws_1", "*");
    // Straight to the service: the gateway's cap on meta is not the only line.
    const meta = JSON.stringify({ blob: "y".repeat(512 * 1024) });
    const keys: string[] = [];
    for (let i = 0; i < 40; i++) keys.push((await m.client.createKey({ caller, apiId, metaJson: meta })).key);
    const verifier = callerOf("ws_1", "api.*.verify_key");
    const small = await m.seed.key({ apiId, name: "small" });
    for (const key of keys) {
      // Binary batches keep each key's answer pre-encoded as well: counted with it.
      const res = await m.client.verifyKeyBatch({
        callers: [verifier],
        items: [
          { callerIndex: 0, request: { key } },
          { callerIndex: 0, request: { key: small.key } },
        ],
      });
      const first = res.results[0]?.result;
      expect(first?.case === "response" && first.value.code).toBe(VerifyCode.VALID);
      expect(m.deps.keyCache.bytes).toBeLessThanOrEqual(8 * MiB);
      if (key === keys[0]) {
        // Meta counted at two bytes a character in the record, and once more in the encoded answer.
        expect(m.deps.keyCache.bytes).toBeGreaterThan(3 * meta.length);
      }
    }
    // Far fewer than 40 fit, the ones verified last, and the small key verified all along is still there.
    expect(m.deps.keyCache.size).toBeLessThan(10);
    expect(m.deps.keyCache.peek("ws_1", small.hash)?.name).toBe("small");
    // Every one still verifies: a key not cached costs a lookup, not a refusal.
    expect((await m.client.verifyKey({ caller: verifier, key: keys[0]! })).code).toBe(VerifyCode.VALID);
  });
});
