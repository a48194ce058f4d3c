import { Code, ConnectError } from "@connectrpc/connect";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys } from "../../testing/in-memory-keys.ts";
import { limit, verificationKit } from "../../testing/verification.ts";

describe("verifyKeyBatch", () => {
  it("answers one result per item, in order, each as verifyKey would", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const limited = await seed.key({ apiId, credits: 1 });
    const open = await seed.key({ apiId });
    const theirs = await seed.key({ apiId: await seed.api("ws_2"), workspaceId: "ws_2" });
    const res = await client.verifyKeyBatch({
      callers: [callerOf("ws_1", "api.*.verify_key"), callerOf("ws_2", "api.*.verify_key")],
      items: [
        { callerIndex: 0, request: { key: limited.key } },
        { callerIndex: 0, request: { key: limited.key } },
        { callerIndex: 0, request: { key: open.key } },
        { callerIndex: 0, request: { key: theirs.key } },
        { callerIndex: 1, request: { key: theirs.key } },
      ],
    });
    const codes = res.results.map((r) => (r.result.case === "response" ? r.result.value.code : undefined));
    // Two spends of one credit: the first in request order wins.
    expect(codes).toEqual([
      VerifyCode.VALID,
      VerifyCode.USAGE_EXCEEDED,
      VerifyCode.VALID,
      VerifyCode.NOT_FOUND,
      VerifyCode.VALID,
    ]);
    const third = res.results[2]?.result;
    expect(third?.case === "response" && third.value.keyId).toBe(open.keyId);
  });

  it("answers a batch mixing keys with named limits and keys with credits but no limits", async () => {
    const { keys, seed, verifier, balance, calls } = verificationKit();
    const apiId = await seed.api();
    const limited = await seed.key({ apiId, credits: 5, ratelimits: [limit("calls", 1, true)] });
    const plain = await seed.key({ apiId, credits: 5 });
    const res = await keys.verifyKeyBatch({
      callers: [verifier],
      items: [plain.key, limited.key, plain.key, limited.key].map((key) => ({
        callerIndex: 0,
        request: { key },
      })),
    });
    expect(res.results.map((r) => r.result.case === "response" && VerifyCode[r.result.value.code])).toEqual([
      "VALID",
      "VALID",
      "VALID",
      "RATE_LIMITED",
    ]);
    expect(await balance(plain.keyId)).toBe(3);
    expect(await balance(limited.keyId)).toBe(4);
    expect(calls.get("CheckNamedLimits")).toBe(1);
  });

  it("turns an item's domain error into its BatchError without failing the others", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const { key, keyId } = await seed.key({ apiId });
    const res = await client.verifyKeyBatch({
      callers: [callerOf("ws_1", "api.*.verify_key")],
      items: [
        { callerIndex: 0, request: { key, ratelimits: [{ name: "missing" }] } },
        { callerIndex: 0, request: { key } },
        { callerIndex: 7, request: { key } },
      ],
    });
    expect(res.results).toHaveLength(3);
    const [first, second, third] = res.results.map((r) => r.result);
    expect(first?.case).toBe("error");
    if (first?.case === "error") {
      expect(first.value.code).toBe(Code.FailedPrecondition);
      expect(first.value.message).toBe(
        `ratelimit 'missing' was requested but does not exist for key '${keyId}' and there is no identity connected`,
      );
      expect(first.value.detail?.reason).toBe(ErrorReason.PRECONDITION_FAILED);
    }
    expect(second?.case === "response" && second.value.code).toBe(VerifyCode.VALID);
    expect(third?.case === "error" && third.value.detail?.reason).toBe(ErrorReason.INVALID_INPUT);
  });

  it("answers an item whose identity lookup passes its deadline as UNAVAILABLE, not as an internal error", async () => {
    let stuck = false;
    const { keys, seed, verifier, deps } = verificationKit({
      identity: (inner) => ({
        unary: (...args) =>
          stuck
            ? Promise.reject(new ConnectError("the operation timed out", Code.DeadlineExceeded))
            : inner.unary(...args),
        stream: (...args) => inner.stream(...args),
      }),
    });
    const apiId = await seed.api();
    await seed.role("reader", ["documents.read"]);
    const withRole = await seed.key({ apiId, roles: ["reader"] });
    const plain = await seed.key({ apiId });
    // Nothing of the role is cached: verifying the key asks the identity service, which now never answers.
    deps.identityCache.invalidate("ws_1");
    stuck = true;
    const res = await keys.verifyKeyBatch({
      callers: [verifier],
      items: [withRole.key, plain.key].map((key) => ({ callerIndex: 0, request: { key } })),
    });
    const [first, second] = res.results.map((r) => r.result);
    expect(first?.case).toBe("error");
    if (first?.case === "error") {
      expect(first.value.code).toBe(Code.Unavailable);
      expect(first.value.detail?.reason).toBe(ErrorReason.UNAVAILABLE);
      expect(first.value.message).toBe(
        "A database or service the verification depends on did not answer in time; retry shortly.",
      );
    }
    expect(second?.case === "response" && VerifyCode[second.value.code]).toBe("VALID");
  });

  it("answers an item whose key lookup loses its database connection as UNAVAILABLE, not as an internal error", async () => {
    const { keys, seed, verifier, deps } = verificationKit();
    const apiId = await seed.api();
    const { key } = await seed.key({ apiId });
    // Not cached: the lookup reaches the store, whose connection breaks as postgres.js reports it.
    deps.keyCache.invalidate();
    deps.store.findKeysByHash = async () => {
      throw Object.assign(new Error("write CONNECTION_CLOSED 127.0.0.1:5432"), { code: "CONNECTION_CLOSED" });
    };
    const res = await keys.verifyKeyBatch({
      callers: [verifier],
      items: [{ callerIndex: 0, request: { key } }],
    });
    const [first] = res.results.map((r) => r.result);
    expect(first?.case === "error" && first.value.code).toBe(Code.Unavailable);
    expect(first?.case === "error" && first.value.detail?.reason).toBe(ErrorReason.UNAVAILABLE);
  });

  it("decides the spends of a batch in one store call and hands them out in request order", async () => {
    const { client, seed, deps } = memoryKeys();
    const apiId = await seed.api();
    const a = await seed.key({ apiId, credits: 2 });
    const b = await seed.key({ apiId, credits: 1 });
    let calls = 0;
    const groups = deps.store.spendCreditsGroups.bind(deps.store);
    deps.store.spendCreditsGroups = (g, at) => {
      calls++;
      return groups(g, at);
    };
    const order = [a.key, b.key, a.key, b.key, a.key];
    const res = await client.verifyKeyBatch({
      callers: [callerOf("ws_1", "api.*.verify_key")],
      items: order.map((key) => ({ callerIndex: 0, request: { key } })),
    });
    const answers = res.results.map((r) =>
      r.result.case === "response" ? [r.result.value.code, r.result.value.credits] : undefined,
    );
    expect(answers).toEqual([
      [VerifyCode.VALID, 1n],
      [VerifyCode.VALID, 0n],
      [VerifyCode.VALID, 0n],
      [VerifyCode.USAGE_EXCEEDED, 0n],
      [VerifyCode.USAGE_EXCEEDED, 0n],
    ]);
    expect(calls).toBe(1);
  });

  it("answers an empty batch with no results", async () => {
    const { client } = memoryKeys();
    expect((await client.verifyKeyBatch({ callers: [], items: [] })).results).toEqual([]);
  });

  it("looks up the keys a batch misses in the cache in one query, once per distinct key", async () => {
    const { client, seed, deps } = memoryKeys();
    const apiId = await seed.api();
    const keys = await Promise.all(Array.from({ length: 5 }, () => seed.key({ apiId, credits: 10 })));
    deps.keyCache.invalidate();
    const queries: string[][] = [];
    const find = deps.store.findKeysByHash.bind(deps.store);
    deps.store.findKeysByHash = (wanted) => {
      queries.push(wanted.map((l) => l.hash));
      return find(wanted);
    };
    const presented = [...keys.map((k) => k.key), keys[0]!.key, "not a key", keys[1]!.key];
    const res = await client.verifyKeyBatch({
      callers: [callerOf("ws_1", "api.*.verify_key")],
      items: presented.map((key) => ({ callerIndex: 0, request: { key } })),
    });
    expect(res.results.map((r) => r.result.case === "response" && VerifyCode[r.result.value.code])).toEqual([
      ...keys.map(() => "VALID"),
      "VALID",
      "NOT_FOUND",
      "VALID",
    ]);
    expect(queries).toHaveLength(1);
    expect(queries[0]).toHaveLength(6);
    // Cached now, the unknown hash too: the same batch again asks nothing.
    await client.verifyKeyBatch({
      callers: [callerOf("ws_1", "api.*.verify_key")],
      items: presented.map((key) => ({ callerIndex: 0, request: { key } })),
    });
    expect(queries).toHaveLength(1);
  });
});
