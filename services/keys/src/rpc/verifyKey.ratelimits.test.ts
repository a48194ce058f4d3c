import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { ErrorReason, verificationOutcomes } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { rejection } from "../../testing/in-memory-keys.ts";
import { limit, verificationKit } from "../../testing/verification.ts";
import { customLimitId } from "../verify/named-limits.ts";

const codes = (results: { code: VerifyCode }[]) => results.map((r) => VerifyCode[r.code]);

describe("verifyKey named rate limits", () => {
  describe("RATE_LIMITED", () => {
    it("answers RATE_LIMITED once an autoApply limit is used up, and spends no credits then", async () => {
      const { seed, verify, balance } = verificationKit();
      const apiId = await seed.api();
      const { keyId, key } = await seed.key({
        apiId,
        credits: 10,
        ratelimits: [limit("calls", 2, true, 60_000)],
      });
      const results = [await verify(key), await verify(key), await verify(key)];
      expect(codes(results)).toEqual(["VALID", "VALID", "RATE_LIMITED"]);
      expect(results[1]?.credits).toBe(8n);
      const limited = results[2]!;
      expect(limited).toMatchObject({ valid: false, keyId });
      expect(limited.credits).toBeUndefined();
      expect(limited.ratelimits).toHaveLength(1);
      expect(limited.ratelimits[0]).toMatchObject({
        name: "calls",
        limit: 2n,
        remaining: 0n,
        exceeded: true,
        duration: 60_000n,
        autoApply: true,
      });
      expect(limited.ratelimits[0]?.id).toMatch(/^rl_/);
      expect(limited.ratelimits[0]?.reset).toBeGreaterThan(0n);
      expect(await balance(keyId)).toBe(8);
    });

    it("answers VALID again once the window has passed", async () => {
      const { seed, verify, clock } = verificationKit();
      const { key } = await seed.key({
        apiId: await seed.api(),
        ratelimits: [limit("calls", 1, true, 1_000)],
      });
      expect((await verify(key)).code).toBe(VerifyCode.VALID);
      expect((await verify(key)).code).toBe(VerifyCode.RATE_LIMITED);
      clock.advance(2_000);
      expect((await verify(key)).code).toBe(VerifyCode.VALID);
    });

    it("counts RATE_LIMITED in the verification outcomes metric", async () => {
      const { seed, verify } = verificationKit();
      const { key } = await seed.key({ apiId: await seed.api(), ratelimits: [limit("calls", 1, true)] });
      const count = async (outcome: string) =>
        (await verificationOutcomes.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
      await verify(key);
      const before = await count("RATE_LIMITED");
      await verify(key);
      await verify(key);
      expect((await count("RATE_LIMITED")) - before).toBe(2);
    });
  });

  describe("identity limits", () => {
    it("shares an identity's limit between all keys of the identity", async () => {
      const { seed, verify } = verificationKit();
      const apiId = await seed.api();
      const identityId = await seed.identity("user_1", [limit("calls", 3, true)]);
      const a = await seed.key({ apiId, identityId });
      const b = await seed.key({ apiId, identityId });
      const lone = await seed.key({ apiId });
      const results = [await verify(a.key), await verify(b.key), await verify(a.key), await verify(b.key)];
      expect(codes(results)).toEqual(["VALID", "VALID", "VALID", "RATE_LIMITED"]);
      expect((await verify(lone.key)).code).toBe(VerifyCode.VALID);
    });

    it("answers the identity with its externalId, meta and limits", async () => {
      const { seed, verify } = verificationKit();
      const identityId = await seed.identity("user_1", [limit("calls", 3, true)], '{"plan":"pro"}');
      const { key } = await seed.key({ apiId: await seed.api(), identityId });
      const res = await verify(key);
      expect(res.identity).toMatchObject({
        id: identityId,
        externalId: "user_1",
        metaJson: '{"plan":"pro"}',
        ratelimits: [{ name: "calls", limit: 3n, duration: 60_000n, autoApply: true }],
      });
      expect(res.identity?.ratelimits[0]?.id).toMatch(/^rl_/);
      expect(res.ratelimits.map((r) => [r.name, r.remaining])).toEqual([["calls", 2n]]);
    });

    it("applies a key's limit rather than its identity's limit of the same name", async () => {
      const { seed, verify } = verificationKit();
      const apiId = await seed.api();
      const identityId = await seed.identity("user_1", [limit("calls", 1, true)]);
      const own = await seed.key({ apiId, identityId, ratelimits: [limit("calls", 3, true)] });
      const plain = await seed.key({ apiId, identityId });
      const results = [await verify(own.key), await verify(own.key), await verify(own.key)];
      expect(codes(results)).toEqual(["VALID", "VALID", "VALID"]);
      expect(results[2]?.ratelimits).toMatchObject([{ name: "calls", limit: 3n, remaining: 0n }]);
      expect((await verify(own.key)).code).toBe(VerifyCode.RATE_LIMITED);
      // The identity's own counter was never touched by the key with its own limit.
      expect(codes([await verify(plain.key), await verify(plain.key)])).toEqual(["VALID", "RATE_LIMITED"]);
    });

    it("drops the identity's limits at the next verification once the identity changes them", async () => {
      const { seed, verify, identity, admin } = verificationKit();
      const identityId = await seed.identity("user_1", [limit("calls", 1, true)]);
      const { key } = await seed.key({ apiId: await seed.api(), identityId });
      expect((await verify(key)).code).toBe(VerifyCode.VALID);
      expect((await verify(key)).code).toBe(VerifyCode.RATE_LIMITED);
      await identity.updateIdentity({ caller: admin, identity: identityId, ratelimits: { ratelimits: [] } });
      const res = await verify(key);
      expect(res).toMatchObject({ code: VerifyCode.VALID, ratelimits: [] });
      expect(res.identity?.ratelimits).toEqual([]);
    });
    it("answers no identity, and applies none of its limits, once the identity is deleted", async () => {
      const { seed, verify, identity, admin } = verificationKit();
      const identityId = await seed.identity("user_1", [limit("calls", 1, true)]);
      const { key } = await seed.key({ apiId: await seed.api(), identityId });
      expect((await verify(key)).identity?.id).toBe(identityId);
      expect((await verify(key)).code).toBe(VerifyCode.RATE_LIMITED);
      await identity.deleteIdentity({ caller: admin, identity: identityId });
      const res = await verify(key);
      expect(res).toMatchObject({ code: VerifyCode.VALID, ratelimits: [] });
      expect(res.identity).toBeUndefined();
    });
  });

  describe("autoApply and manual limits", () => {
    it("checks a manual limit only when the request names it", async () => {
      const { seed, verify } = verificationKit();
      const { key } = await seed.key({
        apiId: await seed.api(),
        ratelimits: [limit("auto", 10, true), limit("manual", 1, false)],
      });
      const unnamed = [await verify(key), await verify(key)];
      expect(codes(unnamed)).toEqual(["VALID", "VALID"]);
      expect(unnamed[1]?.ratelimits.map((r) => r.name)).toEqual(["auto"]);
      const named = await verify(key, { ratelimits: [{ name: "manual" }] });
      expect(named.code).toBe(VerifyCode.VALID);
      expect(named.ratelimits.map((r) => [r.name, r.remaining, r.autoApply])).toEqual([
        ["auto", 7n, true],
        ["manual", 0n, false],
      ]);
      expect((await verify(key, { ratelimits: [{ name: "manual" }] })).code).toBe(VerifyCode.RATE_LIMITED);
    });

    it("spends a named limit's own cost, which overrides the autoApply cost of 1", async () => {
      const { seed, verify } = verificationKit();
      const { key } = await seed.key({ apiId: await seed.api(), ratelimits: [limit("tokens", 5, true)] });
      const heavy = await verify(key, { ratelimits: [{ name: "tokens", cost: 4n }] });
      expect(heavy.ratelimits).toMatchObject([{ name: "tokens", remaining: 1n, exceeded: false }]);
      expect((await verify(key)).ratelimits).toMatchObject([{ remaining: 0n }]);
      const over = await verify(key, { ratelimits: [{ name: "tokens", cost: 0n }] });
      // Cost 0 checks without consuming: an exhausted limit still passes it.
      expect(over.code).toBe(VerifyCode.VALID);
      expect((await verify(key)).code).toBe(VerifyCode.RATE_LIMITED);
    });

    it("counts nothing when one of a verification's limits fails (all or nothing)", async () => {
      const { seed, verify } = verificationKit();
      const { key } = await seed.key({
        apiId: await seed.api(),
        ratelimits: [limit("wide", 10, true), limit("narrow", 1, false)],
      });
      expect((await verify(key, { ratelimits: [{ name: "narrow" }] })).code).toBe(VerifyCode.VALID);
      const failed = await verify(key, { ratelimits: [{ name: "narrow" }] });
      expect(failed.code).toBe(VerifyCode.RATE_LIMITED);
      expect(failed.ratelimits.map((r) => [r.name, r.exceeded])).toEqual([
        ["wide", false],
        ["narrow", true],
      ]);
      // 10 - 1 (first) - 1 (this one): the failed verification's pass of "wide" was not counted.
      expect((await verify(key)).ratelimits).toMatchObject([{ name: "wide", remaining: 8n }]);
    });

    it("checks an inline limit with limit and duration as a custom limit of the key, with an id", async () => {
      const { seed, verify } = verificationKit();
      const { keyId, key } = await seed.key({ apiId: await seed.api() });
      const inline = { name: "burst", limit: 1n, duration: 1_000n };
      const first = await verify(key, { ratelimits: [inline] });
      expect(first.code).toBe(VerifyCode.VALID);
      expect(first.ratelimits).toMatchObject([
        { id: customLimitId(keyId, "burst"), name: "burst", limit: 1n, remaining: 0n, autoApply: false },
      ]);
      expect(first.ratelimits[0]?.id).toMatch(/^rl_[a-zA-Z0-9_]{5,}$/);
      expect((await verify(key, { ratelimits: [inline] })).code).toBe(VerifyCode.RATE_LIMITED);
    });
  });

  describe("PRECONDITION_FAILED", () => {
    it("answers 412 naming the key and the identity for a limit neither has, spending nothing", async () => {
      const { seed, verify, balance } = verificationKit();
      const identityId = await seed.identity("user_1", [limit("calls", 5, true)]);
      const { keyId, key } = await seed.key({
        apiId: await seed.api(),
        identityId,
        credits: 3,
        ratelimits: [limit("own", 5, true)],
      });
      expect(await rejection(verify(key, { ratelimits: [{ name: "tokens" }] }))).toEqual({
        reason: ErrorReason.PRECONDITION_FAILED,
        message: `ratelimit 'tokens' was requested but does not exist for key '${keyId}' nor identity: '${identityId}' external ID: 'user_1'`,
      });
      expect(await balance(keyId)).toBe(3);
      // Neither autoApply limit was counted by the refused request.
      expect((await verify(key)).ratelimits.map((r) => [r.name, r.remaining])).toEqual([
        ["own", 4n],
        ["calls", 4n],
      ]);
    });

    it("accepts a name the identity has even when the key has none of its own", async () => {
      const { seed, verify } = verificationKit();
      const identityId = await seed.identity("user_1", [limit("tokens", 5, false)]);
      const { key } = await seed.key({ apiId: await seed.api(), identityId });
      const res = await verify(key, { ratelimits: [{ name: "tokens", cost: 2n }] });
      expect(res).toMatchObject({ code: VerifyCode.VALID, ratelimits: [{ name: "tokens", remaining: 3n }] });
    });
  });

  describe("the ratelimit service", () => {
    it("is called once for a whole batch, and not at all when no item has a limit", async () => {
      const { seed, keys, verifier, calls } = verificationKit();
      const apiId = await seed.api();
      const identityId = await seed.identity("user_1", [limit("calls", 2, true)]);
      const a = await seed.key({ apiId, identityId, credits: 10 });
      const b = await seed.key({ apiId, identityId, credits: 10 });
      const plain = await seed.key({ apiId });
      const res = await keys.verifyKeyBatch({
        callers: [verifier],
        items: [a.key, b.key, plain.key, a.key].map((key) => ({ callerIndex: 0, request: { key } })),
      });
      expect(
        res.results.map((r) => (r.result.case === "response" ? VerifyCode[r.result.value.code] : "error")),
      ).toEqual(["VALID", "VALID", "VALID", "RATE_LIMITED"]);
      const last = res.results[3]?.result;
      // The rate-limited item spent no credits: a's balance moved once.
      expect(last?.case === "response" && last.value.credits).toBe(undefined);
      expect(calls.get("CheckNamedLimits")).toBe(1);
      await keys.verifyKeyBatch({
        callers: [verifier],
        items: [{ callerIndex: 0, request: { key: plain.key } }],
      });
      expect(calls.get("CheckNamedLimits")).toBe(1);
    });

    it("lets verifications through when the ratelimit service fails (fail open, as Unkey)", async () => {
      const { seed, verify, balance } = verificationKit({ ratelimit: limiterDown() });
      const { keyId, key } = await seed.key({
        apiId: await seed.api(),
        credits: 2,
        ratelimits: [limit("calls", 1, true)],
      });
      const results = [await verify(key), await verify(key)];
      expect(results[1]).toMatchObject({ valid: true, code: VerifyCode.VALID, credits: 0n, ratelimits: [] });
      expect(await balance(keyId)).toBe(0);
    });
  });

  describe("UNAVAILABLE (RATELIMIT_FAIL_OPEN=false)", () => {
    it("refuses the verification with UNAVAILABLE and spends no credits when the ratelimit service fails", async () => {
      const { seed, verify, balance } = verificationKit({
        ratelimit: limiterDown(),
        ratelimitFailOpen: false,
      });
      const { keyId, key } = await seed.key({
        apiId: await seed.api(),
        credits: 2,
        ratelimits: [limit("calls", 1, true)],
      });
      const refused = await rejection(verify(key));
      expect(refused).toEqual({
        reason: ErrorReason.UNAVAILABLE,
        message: "Rate limits could not be checked; retry shortly.",
      });
      expect(await balance(keyId)).toBe(2);
    });

    it("still verifies keys without named limits, and lets through when configured to fail open", async () => {
      const closed = verificationKit({ ratelimit: limiterDown(), ratelimitFailOpen: false });
      const plain = await closed.seed.key({ apiId: await closed.seed.api(), credits: 1 });
      expect(await closed.verify(plain.key)).toMatchObject({ code: VerifyCode.VALID, credits: 0n });

      const open = verificationKit({ ratelimit: limiterDown(), ratelimitFailOpen: true });
      const limited = await open.seed.key({
        apiId: await open.seed.api(),
        ratelimits: [limit("calls", 1, true)],
      });
      expect((await open.verify(limited.key)).code).toBe(VerifyCode.VALID);
    });

    it("fails each batch item that has limits with UNAVAILABLE, spending nothing for it, and answers the others", async () => {
      const { keys, seed, verifier, balance } = verificationKit({
        ratelimit: limiterDown(),
        ratelimitFailOpen: false,
      });
      const apiId = await seed.api();
      const limited = await seed.key({ apiId, credits: 5, ratelimits: [limit("calls", 10, true)] });
      const plain = await seed.key({ apiId, credits: 5 });
      const res = await keys.verifyKeyBatch({
        callers: [verifier],
        items: [limited.key, plain.key, limited.key].map((key) => ({ callerIndex: 0, request: { key } })),
      });
      expect(
        res.results.map((r) =>
          r.result.case === "response" ? VerifyCode[r.result.value.code] : r.result.value?.detail?.reason,
        ),
      ).toEqual([ErrorReason.UNAVAILABLE, "VALID", ErrorReason.UNAVAILABLE]);
      const first = res.results[0]?.result;
      expect(first?.case === "error" && first.value.code).toBe(Code.Unavailable);
      expect(await balance(limited.keyId)).toBe(5);
      expect(await balance(plain.keyId)).toBe(4);
    });
  });
});

/** A ratelimit service that fails every call, as one that cannot be reached. */
function limiterDown() {
  return createRouterTransport((router) =>
    router.service(RatelimitService, {
      checkNamedLimits() {
        throw new ConnectError("unavailable", Code.Unavailable);
      },
    }),
  );
}
