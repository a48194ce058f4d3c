import type { RerollKeyRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.rerollKey answering 200", () => {
  const seen: RerollKeyRequest[] = [];
  const h = harness({
    keys: {
      rerollKey(req) {
        seen.push(req);
        return { keyId: "key_new", key: "sk_9xYz7Qw" };
      },
    },
  });

  it.each([0, 3_600_000, 4_102_444_800_000])(
    "answers the new key's keyId and key, the original stopping %i ms from now",
    async (expiration) => {
      seen.length = 0;
      const res = await h.post("keys.rerollKey", { keyId: "key_old", expiration });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ keyId: "key_new", key: "sk_9xYz7Qw" });
      expect(seen.map((r) => [r.keyId, r.expiration])).toEqual([["key_old", BigInt(expiration)]]);
    },
  );
});
