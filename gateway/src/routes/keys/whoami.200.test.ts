import { create } from "@bufbuild/protobuf";
import { KeySchema, RefillInterval, type WhoamiRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.whoami answering 200", () => {
  it("answers the key behind the plaintext as keys.getKey does", async () => {
    const seen: WhoamiRequest[] = [];
    const h = harness({
      keys: {
        whoami(req) {
          seen.push(req);
          return {
            key: create(KeySchema, {
              keyId: "key_1",
              apiId: "api_1",
              start: "sk_4f9K",
              enabled: true,
              name: "Acme",
              metaJson: '{"plan":"pro"}',
              createdAt: 1_767_225_600_000n,
              lastUsedAt: 1_767_225_800_000n,
              permissions: ["documents.read"],
              roles: ["admin"],
              credits: { remaining: 7n, refill: { interval: RefillInterval.DAILY, amount: 10n } },
              identity: { id: "id_1", externalId: "user_42" },
              ratelimits: [{ id: "rl_1", name: "requests", limit: 100n, duration: 60_000n, autoApply: true }],
            }),
          };
        },
      },
    });
    const res = await h.post("keys.whoami", { key: "sk_4f9K2mQ" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      keyId: "key_1",
      start: "sk_4f9K",
      enabled: true,
      name: "Acme",
      meta: { plan: "pro" },
      createdAt: 1_767_225_600_000,
      lastUsedAt: 1_767_225_800_000,
      permissions: ["documents.read"],
      roles: ["admin"],
      credits: { remaining: 7, refill: { interval: "daily", amount: 10 } },
      identity: { id: "id_1", externalId: "user_42" },
      ratelimits: [{ id: "rl_1", name: "requests", limit: 100, duration: 60_000, autoApply: true }],
    });
    expect(seen.map((r) => r.key)).toEqual(["sk_4f9K2mQ"]);
  });
});
