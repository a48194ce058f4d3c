import { type MigrateKeysRequest, RefillInterval } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

const HEX = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";
const BASE64 = "LCa0a2j/xo/5m0U8HTBBNBNCLXBkg7+g+YpeiGJm564=";

function migrating(
  answer: (req: MigrateKeysRequest) => { migrated: { hash: string; keyId: string }[]; failed: string[] },
) {
  const seen: MigrateKeysRequest[] = [];
  const h = harness({
    keys: {
      migrateKeys(req) {
        seen.push(req);
        return answer(req);
      },
    },
  });
  return { h, seen };
}

describe("POST /v2/keys.migrateKeys answering 200", () => {
  it("answers the imported hashes with their keyIds and the hashes that failed", async () => {
    const { h } = migrating((req) => ({
      migrated: [{ hash: req.keys[0]!.hash, keyId: "key_1" }],
      failed: [req.keys[1]!.hash],
    }));
    const res = await h.post("keys.migrateKeys", {
      migrationId: "acme",
      apiId: "api_1",
      keys: [{ hash: HEX }, { hash: BASE64 }],
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ migrated: [{ hash: HEX, keyId: "key_1" }], failed: [BASE64] });
  });

  it("answers empty lists as [] rather than omitting them", async () => {
    const { h } = migrating(() => ({ migrated: [], failed: [] }));
    const res = await h.post("keys.migrateKeys", {
      migrationId: "acme",
      apiId: "api_1",
      keys: [{ hash: HEX }],
    });
    expect(res.body.data).toEqual({ migrated: [], failed: [] });
  });

  it("passes every field of every key to the service", async () => {
    const { h, seen } = migrating(() => ({ migrated: [], failed: [] }));
    const res = await h.post("keys.migrateKeys", {
      migrationId: "acme",
      apiId: "api_1",
      keys: [
        {
          hash: HEX,
          start: "sk_live_4f9K",
          name: "Acme",
          externalId: "user_42",
          meta: { plan: "pro" },
          roles: ["admin"],
          permissions: ["documents.read"],
          expires: 4_102_444_800_000,
          enabled: false,
          credits: { remaining: 100, refill: { interval: "monthly", amount: 100, refillDay: 3 } },
          ratelimits: [{ name: "requests", limit: 10, duration: 60_000, autoApply: true }],
        },
        { hash: BASE64, credits: { remaining: null } },
      ],
    });
    expect(res.status).toBe(200);
    const req = seen[0]!;
    expect([req.migrationId, req.apiId]).toEqual(["acme", "api_1"]);
    expect(req.keys[0]).toMatchObject({
      hash: HEX,
      start: "sk_live_4f9K",
      name: "Acme",
      externalId: "user_42",
      metaJson: '{"plan":"pro"}',
      roles: ["admin"],
      permissions: ["documents.read"],
      expires: 4_102_444_800_000n,
      enabled: false,
      credits: { remaining: 100n, refill: { interval: RefillInterval.MONTHLY, amount: 100n, refillDay: 3 } },
    });
    expect(req.keys[0]!.ratelimits.map((r) => [r.name, r.limit, r.duration, r.autoApply])).toEqual([
      ["requests", 10n, 60_000n, true],
    ]);
    // Unlimited: credits present, remaining unset.
    const second = req.keys[1]!;
    expect(second.credits).toBeDefined();
    expect(second.credits?.remaining).toBeUndefined();
    expect([second.start, second.name, second.expires, second.enabled, second.roles]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      [],
    ]);
  });
});
