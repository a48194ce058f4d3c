import { create } from "@bufbuild/protobuf";
import {
  KeyIdentitySchema,
  VerifyCode,
  VerifyKeyResponseSchema,
  VerifyRatelimitResultSchema,
} from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { decide, missingKey } from "./answer.ts";
import { parsePolicies } from "./file.ts";

const NOW = 1_800_000_000_000;
const policyOf = (yaml: string) => parsePolicies(`policies: [${yaml}]`, "test").match("GET", "h", "/")!;
const limit = (name: string, remaining: number, exceeded: boolean) =>
  create(VerifyRatelimitResultSchema, {
    id: "rl_1",
    name,
    limit: 10n,
    duration: 60_000n,
    reset: BigInt(NOW + 12_300),
    remaining: BigInt(remaining),
    exceeded,
  });

describe("forward-auth's answers", () => {
  const plain = policyOf("{ name: p, apiId: api_a }");

  it("writes each limit checked in the draft's RateLimit-Policy and RateLimit fields", () => {
    const r = create(VerifyKeyResponseSchema, {
      valid: true,
      code: VerifyCode.VALID,
      keyId: "key_1",
      ratelimits: [limit("requests", 7, false), limit('odd "name" \\ é', 0, false)],
    });
    const d = decide(r, plain, "req_1", undefined, NOW);
    expect(d.status).toBe(200);
    expect(d.headers["ratelimit-policy"]).toBe('"requests";q=10;w=60, "odd \\"name\\" \\\\ ";q=10;w=60');
    expect(d.headers.ratelimit).toBe('"requests";r=7;t=13, "odd \\"name\\" \\\\ ";r=0;t=13');
    expect(d.headers["retry-after"]).toBeUndefined();
  });

  it("answers a rate-limited key 429 with Retry-After, the wait of the exceeded limit", () => {
    const r = create(VerifyKeyResponseSchema, {
      valid: false,
      code: VerifyCode.RATE_LIMITED,
      keyId: "key_1",
      ratelimits: [limit("requests", 0, true)],
    });
    const d = decide(r, plain, "req_1", undefined, NOW);
    expect(d.status).toBe(429);
    expect(d.headers["retry-after"]).toBe("13");
    expect(JSON.parse(d.body)).toEqual({
      valid: false,
      code: "RATE_LIMITED",
      message: "Too many requests: the API key's rate limit is reached.",
      policy: "p",
      requestId: "req_1",
    });
    expect(d.headers["x-latchkey-answer"]).toBe(d.body);
    // Upstream fields are for allowed requests only.
    expect(d.headers["x-latchkey-key-id"]).toBeUndefined();
  });

  it("gives each refusal its status", () => {
    const statusOf = (code: VerifyCode) =>
      decide(create(VerifyKeyResponseSchema, { valid: false, code }), plain, "req_1", undefined, NOW).status;
    expect(statusOf(VerifyCode.NOT_FOUND)).toBe(401);
    expect(statusOf(VerifyCode.DISABLED)).toBe(403);
    expect(statusOf(VerifyCode.EXPIRED)).toBe(403);
    expect(statusOf(VerifyCode.FORBIDDEN)).toBe(403);
    expect(statusOf(VerifyCode.INSUFFICIENT_PERMISSIONS)).toBe(403);
    expect(statusOf(VerifyCode.USAGE_EXCEEDED)).toBe(403);
    expect(statusOf(VerifyCode.RATE_LIMITED)).toBe(429);
  });

  it("tells the upstream what the policy chose, non-ASCII percent-encoded, and the key only when not stripped", () => {
    const chosen = policyOf(
      "{ name: p, apiId: api_a, upstream: { identity: true, credits: true, meta: [plan, seats, absent] } }",
    );
    const r = create(VerifyKeyResponseSchema, {
      valid: true,
      code: VerifyCode.VALID,
      keyId: "key_1",
      credits: 41n,
      metaJson: JSON.stringify({ plan: "pro", seats: 5, secret: "never" }),
      identity: create(KeyIdentitySchema, { id: "id_1", externalId: "jürgen" }),
    });
    const d = decide(r, chosen, "req_1", "Bearer sk_1", NOW);
    expect(d.headers).toMatchObject({
      "x-latchkey-key-id": "key_1",
      "x-latchkey-identity": "j%C3%BCrgen",
      "x-latchkey-credits": "41",
      "x-latchkey-meta-plan": "pro",
      "x-latchkey-meta-seats": "5",
      "x-latchkey-authorization": "Bearer sk_1",
    });
    expect(d.headers["x-latchkey-meta-absent"]).toBeUndefined();
    expect(d.headers["x-latchkey-meta-secret"]).toBeUndefined();
    const stripped = decide(
      r,
      policyOf("{ name: s, apiId: api_a, stripKey: true }"),
      "req_1",
      "Bearer sk_1",
      NOW,
    );
    expect(stripped.headers["x-latchkey-authorization"]).toBe("");
    expect(stripped.headers["x-latchkey-identity"]).toBeUndefined();
  });

  it("lets a dry run's refusal through with its verdict, and a missing key too", () => {
    const dry = policyOf("{ name: d, apiId: api_a, dryRun: true }");
    const r = create(VerifyKeyResponseSchema, { valid: false, code: VerifyCode.DISABLED, keyId: "key_1" });
    const d = decide(r, dry, "req_1", "Bearer sk_1", NOW);
    expect(d.status).toBe(200);
    expect(d.code).toBe("DISABLED");
    expect(d.headers["x-latchkey-dry-run"]).toBe("DISABLED");
    expect(d.headers["x-latchkey-key-id"]).toBe("key_1");
    expect(d.headers["x-latchkey-answer"]).toBeUndefined();
    const missing = missingKey(dry, "req_2");
    expect(missing.status).toBe(200);
    expect(missing.headers["x-latchkey-dry-run"]).toBe("MISSING_KEY");
    expect(missing.headers["www-authenticate"]).toBeUndefined();
    expect(missingKey(plain, "req_3").headers["www-authenticate"]).toBe('Bearer realm="latchkey"');
  });
});
