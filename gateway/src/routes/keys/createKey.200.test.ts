import { type CreateKeyRequest, RefillInterval } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.createKey answering 200", () => {
  let seen: CreateKeyRequest | undefined;
  const h = harness({
    keys: {
      createKey(req) {
        seen = req;
        return { keyId: "key_9xZ", key: "sk_4f9K2mQ" };
      },
    },
  });

  it("answers the keyId and the key string", async () => {
    const res = await h.post("keys.createKey", { apiId: "api_123" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ keyId: "key_9xZ", key: "sk_4f9K2mQ" });
    expect(seen?.apiId).toBe("api_123");
    expect(seen?.prefix).toBeUndefined();
    expect(seen?.credits).toBeUndefined();
    expect(seen?.enabled).toBeUndefined();
    expect(seen?.recoverable).toBe(false);
  });

  it("accepts every field of Latchkey's API and Unkey's and passes each to the service", async () => {
    const res = await h.post("keys.createKey", {
      apiId: "api_123",
      prefix: "sk_live",
      name: "Acme production",
      byteLength: 24,
      externalId: "user.42-acme",
      meta: { plan: "enterprise", seats: 12, nested: { a: [1, 2] } },
      roles: ["admin", "billing_reader"],
      permissions: ["documents.read", "documents.*", "ns:colon-ok"],
      expires: 4102444800000,
      credits: { remaining: 1000, refill: { interval: "monthly", amount: 500, refillDay: 31 } },
      ratelimits: [
        { name: "requests", limit: 100, duration: 60_000, autoApply: true },
        { name: "heavy_operations", limit: 10, duration: 3_600_000 },
      ],
      enabled: false,
      recoverable: true,
    });
    expect(res.status).toBe(200);
    expect(seen?.prefix).toBe("sk_live");
    expect(seen?.name).toBe("Acme production");
    expect(seen?.byteLength).toBe(24);
    expect(seen?.externalId).toBe("user.42-acme");
    expect(JSON.parse(seen?.metaJson ?? "")).toEqual({
      plan: "enterprise",
      seats: 12,
      nested: { a: [1, 2] },
    });
    expect(seen?.roles).toEqual(["admin", "billing_reader"]);
    expect(seen?.permissions).toEqual(["documents.read", "documents.*", "ns:colon-ok"]);
    expect(seen?.expires).toBe(4102444800000n);
    expect(seen?.credits?.remaining).toBe(1000n);
    expect(seen?.credits?.refill?.interval).toBe(RefillInterval.MONTHLY);
    expect(seen?.credits?.refill?.amount).toBe(500n);
    expect(seen?.credits?.refill?.refillDay).toBe(31);
    expect(seen?.ratelimits.map((r) => [r.name, r.limit, r.duration, r.autoApply])).toEqual([
      ["requests", 100n, 60_000n, true],
      ["heavy_operations", 10n, 3_600_000n, false],
    ]);
    expect(seen?.enabled).toBe(false);
    expect(seen?.recoverable).toBe(true);
  });

  it("passes a daily refill without a refillDay", async () => {
    await h.post("keys.createKey", {
      apiId: "api_123",
      credits: { remaining: 0, refill: { interval: "daily", amount: 1 } },
    });
    expect(seen?.credits?.remaining).toBe(0n);
    expect(seen?.credits?.refill?.interval).toBe(RefillInterval.DAILY);
    expect(seen?.credits?.refill?.refillDay).toBeUndefined();
  });
});
