import { create } from "@bufbuild/protobuf";
import { KeySchema, RefillInterval } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.getKey answering 200", () => {
  it("answers every field of the key as JSON numbers and objects", async () => {
    const h = harness({
      keys: {
        getKey: (req) => ({
          key: create(KeySchema, {
            keyId: req.keyId,
            apiId: "api_1",
            start: "sk_4f9K",
            enabled: true,
            name: "Acme",
            metaJson: '{"plan":"pro"}',
            createdAt: 1_767_225_600_000n,
            updatedAt: 1_767_225_700_000n,
            expires: 4_102_444_800_000n,
            permissions: ["documents.read"],
            roles: ["admin"],
            credits: {
              remaining: 42n,
              refill: { interval: RefillInterval.MONTHLY, amount: 100n, refillDay: 1 },
            },
            identity: {
              id: "id_1",
              externalId: "user_42",
              metaJson: '{"tier":"gold"}',
              ratelimits: [{ id: "rl_2", name: "shared", limit: 5n, duration: 1000n, autoApply: true }],
            },
            ratelimits: [{ id: "rl_1", name: "requests", limit: 100n, duration: 60_000n, autoApply: false }],
            plaintext: req.decrypt ? "sk_4f9K2mQ" : undefined,
          }),
        }),
      },
    });
    const res = await h.post("keys.getKey", { keyId: "key_1", decrypt: true });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      keyId: "key_1",
      start: "sk_4f9K",
      enabled: true,
      name: "Acme",
      meta: { plan: "pro" },
      createdAt: 1_767_225_600_000,
      updatedAt: 1_767_225_700_000,
      expires: 4_102_444_800_000,
      permissions: ["documents.read"],
      roles: ["admin"],
      credits: { remaining: 42, refill: { interval: "monthly", amount: 100, refillDay: 1 } },
      identity: {
        id: "id_1",
        externalId: "user_42",
        meta: { tier: "gold" },
        ratelimits: [{ id: "rl_2", name: "shared", limit: 5, duration: 1000, autoApply: true }],
      },
      ratelimits: [{ id: "rl_1", name: "requests", limit: 100, duration: 60_000, autoApply: false }],
      plaintext: "sk_4f9K2mQ",
    });
  });

  it("omits what the key does not have", async () => {
    const h = harness({
      keys: {
        getKey: (req) => ({
          key: create(KeySchema, { keyId: req.keyId, start: "4f9K", enabled: false, createdAt: 5n }),
        }),
      },
    });
    const res = await h.post("keys.getKey", { keyId: "key_1" });
    expect(res.body.data).toEqual({
      keyId: "key_1",
      start: "4f9K",
      enabled: false,
      createdAt: 5,
      permissions: [],
      roles: [],
    });
  });
});
