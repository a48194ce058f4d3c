import { create } from "@bufbuild/protobuf";
import {
  VerifyCode,
  type VerifyKeyBatchRequest,
  type VerifyKeyRequest,
  VerifyKeyResponseSchema,
} from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

/** A fake VerifyKeyBatch: answers each item with `answer(request)`, recording every batch. */
function batching(
  answer: (r: VerifyKeyRequest) => Parameters<typeof create<typeof VerifyKeyResponseSchema>>[1],
) {
  const batches: VerifyKeyBatchRequest[] = [];
  return {
    batches,
    keys: {
      verifyKeyBatch(req: VerifyKeyBatchRequest) {
        batches.push(req);
        return {
          results: req.items.map((item) => ({
            result: {
              case: "response" as const,
              value: create(VerifyKeyResponseSchema, answer(item.request!)),
            },
          })),
        };
      },
    },
  };
}

describe("POST /v2/keys.verifyKey answering 200", () => {
  it("answers VALID with every field of the key, as Unkey spells them", async () => {
    const fake = batching(() => ({
      valid: true,
      code: VerifyCode.VALID,
      keyId: "key_1",
      name: "Acme",
      metaJson: '{"plan":"pro"}',
      expires: 4_102_444_800_000n,
      credits: 41n,
      enabled: true,
      permissions: ["documents.read"],
      roles: ["admin"],
      identity: { id: "id_1", externalId: "user_42" },
      ratelimits: [
        {
          id: "rl_1",
          name: "requests",
          limit: 100n,
          duration: 60_000n,
          reset: 1_767_225_660_000n,
          remaining: 99n,
          exceeded: false,
          autoApply: true,
        },
      ],
    }));
    const h = harness({ keys: fake.keys });
    const res = await h.post("keys.verifyKey", { key: "sk_4f9K2mQ" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      valid: true,
      code: "VALID",
      keyId: "key_1",
      name: "Acme",
      meta: { plan: "pro" },
      expires: 4_102_444_800_000,
      credits: 41,
      enabled: true,
      permissions: ["documents.read"],
      roles: ["admin"],
      identity: { id: "id_1", externalId: "user_42" },
      ratelimits: [
        {
          id: "rl_1",
          name: "requests",
          limit: 100,
          duration: 60_000,
          reset: 1_767_225_660_000,
          remaining: 99,
          exceeded: false,
          autoApply: true,
        },
      ],
    });
  });

  it("answers the identity with its meta and limits, and a denied limit of the identity beside the key's", async () => {
    const fake = batching(() => ({
      valid: false,
      code: VerifyCode.RATE_LIMITED,
      keyId: "key_1",
      enabled: true,
      identity: {
        id: "id_1",
        externalId: "user_42",
        metaJson: '{"tier":"gold"}',
        ratelimits: [{ id: "rl_9", name: "shared", limit: 5n, duration: 1000n, autoApply: true }],
      },
      ratelimits: [
        {
          id: "rl_1",
          name: "requests",
          limit: 100n,
          duration: 60_000n,
          reset: 1_767_225_660_000n,
          remaining: 99n,
          exceeded: false,
          autoApply: false,
        },
        {
          id: "rl_9",
          name: "shared",
          limit: 5n,
          duration: 1000n,
          reset: 1_767_225_601_000n,
          remaining: 0n,
          exceeded: true,
          autoApply: true,
        },
      ],
    }));
    const h = harness({ keys: fake.keys });
    const res = await h.post("keys.verifyKey", { key: "sk_1", ratelimits: [{ name: "requests" }] });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      valid: false,
      code: "RATE_LIMITED",
      keyId: "key_1",
      enabled: true,
      permissions: [],
      roles: [],
      identity: {
        id: "id_1",
        externalId: "user_42",
        meta: { tier: "gold" },
        ratelimits: [{ id: "rl_9", name: "shared", limit: 5, duration: 1000, autoApply: true }],
      },
      ratelimits: [
        {
          id: "rl_1",
          name: "requests",
          limit: 100,
          duration: 60_000,
          reset: 1_767_225_660_000,
          remaining: 99,
          exceeded: false,
          autoApply: false,
        },
        {
          id: "rl_9",
          name: "shared",
          limit: 5,
          duration: 1000,
          reset: 1_767_225_601_000,
          remaining: 0,
          exceeded: true,
          autoApply: true,
        },
      ],
    });
  });

  it("writes names, meta and permissions with quotes, backslashes and non-ASCII as JSON, fields in Unkey's order", async () => {
    const fake = batching(() => ({
      valid: true,
      code: VerifyCode.VALID,
      keyId: "key_1",
      name: 'Acme "Ltd" \\ é✓\n',
      metaJson: '{"note":"a \\"quoted\\" \\u00e9","n":[1,2]}',
      enabled: false,
      permissions: ['docs."read"'],
      roles: [],
      ratelimits: [
        {
          id: "rl_1",
          name: "per\\second",
          limit: 1n,
          duration: 1000n,
          reset: 0n,
          remaining: 0n,
          exceeded: true,
        },
      ],
    }));
    const h = harness({ keys: fake.keys });
    const res = await h.post("keys.verifyKey", { key: "sk_1" });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data)).toEqual([
      "valid",
      "code",
      "keyId",
      "name",
      "meta",
      "enabled",
      "permissions",
      "roles",
      "ratelimits",
    ]);
    expect(res.body.data).toEqual({
      valid: true,
      code: "VALID",
      keyId: "key_1",
      name: 'Acme "Ltd" \\ é✓\n',
      meta: { note: 'a "quoted" é', n: [1, 2] },
      enabled: false,
      permissions: ['docs."read"'],
      roles: [],
      ratelimits: [
        {
          id: "rl_1",
          name: "per\\second",
          limit: 1,
          duration: 1000,
          reset: 0,
          remaining: 0,
          exceeded: true,
          autoApply: false,
        },
      ],
    });
  });

  it("answers an unlimited key without credits, and a corrupt meta without meta", async () => {
    const fake = batching(() => ({
      valid: true,
      code: VerifyCode.VALID,
      keyId: "key_1",
      metaJson: "{oops",
      enabled: true,
    }));
    const h = harness({ keys: fake.keys });
    const res = await h.post("keys.verifyKey", { key: "sk_1" });
    expect(res.body.data).toEqual({
      valid: true,
      code: "VALID",
      keyId: "key_1",
      enabled: true,
      permissions: [],
      roles: [],
    });
  });

  it("answers NOT_FOUND with only valid and code", async () => {
    const h = harness({ keys: batching(() => ({ valid: false, code: VerifyCode.NOT_FOUND })).keys });
    const res = await h.post("keys.verifyKey", { key: "sk_unknown" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ valid: false, code: "NOT_FOUND" });
  });

  it.each([
    [VerifyCode.USAGE_EXCEEDED, "USAGE_EXCEEDED"],
    [VerifyCode.DISABLED, "DISABLED"],
    [VerifyCode.EXPIRED, "EXPIRED"],
    [VerifyCode.RATE_LIMITED, "RATE_LIMITED"],
    [VerifyCode.INSUFFICIENT_PERMISSIONS, "INSUFFICIENT_PERMISSIONS"],
    [VerifyCode.FORBIDDEN, "FORBIDDEN"],
  ])("answers a failed verification (%s) as 200 with valid false and code %s", async (code, name) => {
    const h = harness({
      keys: batching(() => ({ valid: false, code, keyId: "key_1", credits: 0n, enabled: true })).keys,
    });
    const res = await h.post("keys.verifyKey", { key: "sk_1" });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ valid: false, code: name, keyId: "key_1", credits: 0 });
  });

  it("passes every reference field to the service, with the requestId and the caller", async () => {
    const fake = batching(() => ({ valid: true, code: VerifyCode.VALID, keyId: "key_1" }));
    const h = harness({ keys: fake.keys });
    const key = h.rootKey("api.*.verify_key");
    const res = await h.post(
      "keys.verifyKey",
      {
        key: "sk_4f9K2mQ",
        credits: { cost: 0 },
        tags: ["path=/v1/charge", "region:eu"],
        permissions: "documents.read AND (billing.read OR admin)",
        ratelimits: [
          { name: "requests", cost: 2 },
          { name: "burst", limit: 5, duration: 1000 },
        ],
        migrationId: "mig_1",
      },
      { key },
    );
    expect(res.status).toBe(200);
    const [batch] = fake.batches;
    expect(batch?.callers.map((c) => c.permissions)).toEqual([["api.*.verify_key"]]);
    const item = batch?.items[0];
    expect(item?.callerIndex).toBe(0);
    expect(item?.request?.key).toBe("sk_4f9K2mQ");
    expect(item?.request?.cost).toBe(0n);
    expect(item?.request?.tags).toEqual(["path=/v1/charge", "region:eu"]);
    expect(item?.request?.permissions).toBe("documents.read AND (billing.read OR admin)");
    expect(item?.request?.ratelimits.map((r) => [r.name, r.cost, r.limit, r.duration])).toEqual([
      ["requests", 2n, undefined, undefined],
      ["burst", undefined, 5n, 1000n],
    ]);
    expect(item?.request?.migrationId).toBe("mig_1");
    expect(item?.request?.requestId).toBe(res.body.meta.requestId);
  });

  it("leaves the cost unset when credits are not given, so the service applies its default of 1", async () => {
    const fake = batching(() => ({ valid: true, code: VerifyCode.VALID }));
    const h = harness({ keys: fake.keys });
    await h.post("keys.verifyKey", { key: "sk_1" });
    expect(fake.batches[0]?.items[0]?.request?.cost).toBeUndefined();
  });

  it("shares one VerifyKeyBatch call among concurrent verifications and gives each its own answer", async () => {
    const fake = batching((r) => ({
      valid: true,
      code: VerifyCode.VALID,
      keyId: r.key.replace("sk_", "key_"),
    }));
    const h = harness({ keys: fake.keys });
    const alice = h.rootKey("api.*.verify_key");
    const bob = h.rootKey("api.api_b.verify_key");
    const n = 40;
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        h.post("keys.verifyKey", { key: `sk_${i}` }, { key: i % 2 === 0 ? alice : bob }),
      ),
    );
    expect(answers.map((a) => a.body.data.keyId)).toEqual(Array.from({ length: n }, (_, i) => `key_${i}`));
    expect(fake.batches.length).toBeLessThan(n);
    expect(fake.batches.length).toBeLessThanOrEqual(3);
    expect(fake.batches.reduce((sum, b) => sum + b.items.length, 0)).toBe(n);
    for (const batch of fake.batches) {
      // Each distinct root key crosses the wire once per batch, and each item names its own.
      expect(batch.callers.length).toBeLessThanOrEqual(2);
      for (const item of batch.items) {
        const i = Number(item.request!.key.slice(3));
        const expected = i % 2 === 0 ? ["api.*.verify_key"] : ["api.api_b.verify_key"];
        expect(batch.callers[item.callerIndex]?.permissions).toEqual(expected);
      }
    }
  });
});
