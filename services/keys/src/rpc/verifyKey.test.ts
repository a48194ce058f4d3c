import { create, fromBinary } from "@bufbuild/protobuf";
import { type KeyVerified, KeyVerifiedSchema } from "@latchkey/proto/keys/v1/events_pb";
import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { DirectEventSink, ErrorReason, MemoryBus } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { callerOf, memoryKeys, rejection } from "../../testing/in-memory-keys.ts";
import { encodeKeyVerified, keyChanged } from "../events.ts";

const verifier = (ws = "ws_1") => callerOf(ws, "api.*.verify_key");

describe("verifyKey", () => {
  describe("VALID", () => {
    it("answers valid with the key's data", async () => {
      const { client, seed } = memoryKeys();
      const apiId = await seed.api();
      const { keyId, key } = await seed.key({
        apiId,
        name: "customer 7",
        metaJson: '{"plan":"pro"}',
        permissions: ["documents.read"],
        expires: 4_102_444_800_000n,
      });
      const res = await client.verifyKey({ caller: verifier(), key });
      expect(res).toMatchObject({
        valid: true,
        code: VerifyCode.VALID,
        keyId,
        name: "customer 7",
        metaJson: '{"plan":"pro"}',
        expires: 4_102_444_800_000n,
        enabled: true,
        permissions: ["documents.read"],
        roles: [],
        ratelimits: [],
      });
      expect(res.credits).toBeUndefined();
      expect(res.identity).toBeUndefined();
    });

    it("answers valid to a root key holding verify_key for that very API", async () => {
      const { client, seed } = memoryKeys();
      const apiId = await seed.api();
      const { key } = await seed.key({ apiId });
      const res = await client.verifyKey({ caller: callerOf("ws_1", `api.${apiId}.verify_key`), key });
      expect(res.code).toBe(VerifyCode.VALID);
    });
  });

  describe("NOT_FOUND", () => {
    it("answers NOT_FOUND with no key data for an unknown key", async () => {
      const { client } = memoryKeys();
      const res = await client.verifyKey({ caller: verifier(), key: "sk_nope" });
      expect(res).toMatchObject({ valid: false, code: VerifyCode.NOT_FOUND, permissions: [], roles: [] });
      expect(res.keyId).toBeUndefined();
    });

    it("answers NOT_FOUND for a key of another workspace", async () => {
      const { client, seed } = memoryKeys();
      const theirApi = await seed.api("ws_2");
      const { key } = await seed.key({ apiId: theirApi, workspaceId: "ws_2" });
      expect((await client.verifyKey({ caller: callerOf("ws_1", "*"), key })).code).toBe(
        VerifyCode.NOT_FOUND,
      );
      expect((await client.verifyKey({ caller: verifier("ws_2"), key })).code).toBe(VerifyCode.VALID);
    });

    it("answers NOT_FOUND to a root key without verify_key, and to one allowed another API only", async () => {
      const { client, seed } = memoryKeys();
      const apiId = await seed.api();
      const { key } = await seed.key({ apiId });
      const readOnly = await client.verifyKey({ caller: callerOf("ws_1", "api.*.read_key"), key });
      const otherApi = await client.verifyKey({ caller: callerOf("ws_1", "api.api_other.verify_key"), key });
      expect(readOnly).toMatchObject({ valid: false, code: VerifyCode.NOT_FOUND });
      expect(readOnly.keyId).toBeUndefined();
      expect(otherApi).toMatchObject({ valid: false, code: VerifyCode.NOT_FOUND });
    });

    it("answers NOT_FOUND for a deleted key and for a key of a deleted API", async () => {
      const { client, seed, deps } = memoryKeys();
      const apiId = await seed.api();
      const deleted = await seed.key({ apiId });
      deps.store.patchKey(deleted.keyId, { deletedAt: 1 });
      keyChanged(deps, { workspaceId: "ws_1", hash: deleted.hash });
      expect((await client.verifyKey({ caller: verifier(), key: deleted.key })).code).toBe(
        VerifyCode.NOT_FOUND,
      );

      const orphan = await seed.key({ apiId });
      expect((await client.verifyKey({ caller: verifier(), key: orphan.key })).code).toBe(VerifyCode.VALID);
      deps.store.patchApi(apiId, { deletedAt: 1 });
      keyChanged(deps, { workspaceId: "ws_1", apiId });
      expect((await client.verifyKey({ caller: verifier(), key: orphan.key })).code).toBe(
        VerifyCode.NOT_FOUND,
      );
    });
  });

  it("answers DISABLED for a disabled key, with its data", async () => {
    const { client, seed } = memoryKeys();
    const apiId = await seed.api();
    const { keyId, key } = await seed.key({ apiId, enabled: false, credits: 3 });
    const res = await client.verifyKey({ caller: verifier(), key });
    expect(res).toMatchObject({ valid: false, code: VerifyCode.DISABLED, keyId, enabled: false });
    expect(res.credits).toBeUndefined();
  });

  it("answers EXPIRED once server time passes expires, and spends nothing", async () => {
    const { client, seed, clock, deps } = memoryKeys();
    const apiId = await seed.api();
    const expires = clock.now() + 60_000;
    const { keyId, key } = await seed.key({ apiId, expires: BigInt(expires), credits: 3 });
    expect((await client.verifyKey({ caller: verifier(), key })).code).toBe(VerifyCode.VALID);
    clock.set(expires);
    expect((await client.verifyKey({ caller: verifier(), key })).code).toBe(VerifyCode.VALID);
    clock.set(expires + 1);
    const res = await client.verifyKey({ caller: verifier(), key });
    expect(res).toMatchObject({ valid: false, code: VerifyCode.EXPIRED, expires: BigInt(expires) });
    expect((await deps.store.findKeyById(keyId))?.remaining).toBe(1);
  });

  describe("credits", () => {
    it("spends 1 credit by default and answers the balance after", async () => {
      const { client, seed } = memoryKeys();
      const apiId = await seed.api();
      const { key } = await seed.key({ apiId, credits: 2 });
      expect(await client.verifyKey({ caller: verifier(), key })).toMatchObject({ valid: true, credits: 1n });
      expect(await client.verifyKey({ caller: verifier(), key })).toMatchObject({ valid: true, credits: 0n });
      expect(await client.verifyKey({ caller: verifier(), key })).toMatchObject({
        valid: false,
        code: VerifyCode.USAGE_EXCEEDED,
        credits: 0n,
      });
    });

    it("spends the given cost", async () => {
      const { client, seed } = memoryKeys();
      const apiId = await seed.api();
      const { key } = await seed.key({ apiId, credits: 10 });
      expect(await client.verifyKey({ caller: verifier(), key, cost: 4n })).toMatchObject({
        valid: true,
        credits: 6n,
      });
    });

    it("answers USAGE_EXCEEDED and spends nothing when cost exceeds the balance", async () => {
      const { client, seed, deps } = memoryKeys();
      const apiId = await seed.api();
      const { keyId, key } = await seed.key({ apiId, credits: 3 });
      const res = await client.verifyKey({ caller: verifier(), key, cost: 4n });
      expect(res).toMatchObject({ valid: false, code: VerifyCode.USAGE_EXCEEDED, keyId, credits: 3n });
      expect((await deps.store.findKeyById(keyId))?.remaining).toBe(3);
      expect(await client.verifyKey({ caller: verifier(), key, cost: 3n })).toMatchObject({
        valid: true,
        credits: 0n,
      });
    });

    it("answers VALID for cost 0 even at balance 0, spending nothing", async () => {
      const { client, seed } = memoryKeys();
      const apiId = await seed.api();
      const { key } = await seed.key({ apiId, credits: 0 });
      expect(await client.verifyKey({ caller: verifier(), key, cost: 0n })).toMatchObject({
        valid: true,
        code: VerifyCode.VALID,
        credits: 0n,
      });
      expect((await client.verifyKey({ caller: verifier(), key })).code).toBe(VerifyCode.USAGE_EXCEEDED);
    });

    it("answers the current balance, not a cached one, after another instance spent credits", async () => {
      const { client, seed, deps } = memoryKeys();
      const apiId = await seed.api();
      const { keyId, key } = await seed.key({ apiId, credits: 5 });
      expect((await client.verifyKey({ caller: verifier(), key })).credits).toBe(4n);
      await deps.store.spendCredits(keyId, 2, 0);
      expect((await client.verifyKey({ caller: verifier(), key })).credits).toBe(1n);
    });

    it("answers INVALID_INPUT for a negative cost", async () => {
      const { client, seed } = memoryKeys();
      const apiId = await seed.api();
      const { key } = await seed.key({ apiId, credits: 5 });
      expect((await rejection(client.verifyKey({ caller: verifier(), key, cost: -1n }))).reason).toBe(
        ErrorReason.INVALID_INPUT,
      );
    });
  });

  describe("permission query", () => {
    it("answers VALID when the key's permissions satisfy the query", async () => {
      const { client, seed } = memoryKeys();
      const apiId = await seed.api();
      const { key } = await seed.key({ apiId, permissions: ["a", "c"] });
      const res = await client.verifyKey({ caller: verifier(), key, permissions: "a AND (b OR c)" });
      expect(res.code).toBe(VerifyCode.VALID);
    });

    it("answers INSUFFICIENT_PERMISSIONS and spends nothing when they do not", async () => {
      const { client, seed, deps } = memoryKeys();
      const apiId = await seed.api();
      const { keyId, key } = await seed.key({ apiId, permissions: ["a"], credits: 1 });
      const res = await client.verifyKey({ caller: verifier(), key, permissions: "a and b" });
      expect(res).toMatchObject({ valid: false, code: VerifyCode.INSUFFICIENT_PERMISSIONS, keyId });
      expect((await deps.store.findKeyById(keyId))?.remaining).toBe(1);
    });

    it("answers PERMISSIONS_QUERY_SYNTAX for a malformed query", async () => {
      const { client, seed } = memoryKeys();
      const apiId = await seed.api();
      const { key } = await seed.key({ apiId });
      expect(await rejection(client.verifyKey({ caller: verifier(), key, permissions: "a AND !b" }))).toEqual(
        {
          reason: ErrorReason.PERMISSIONS_QUERY_SYNTAX,
          message:
            "Invalid character '!' found in query at position 6: a permission may hold letters, digits and . _ - * : /",
        },
      );
    });
  });

  describe("rate limits", () => {
    it("answers PRECONDITION_FAILED when the verification names a limit the key does not have", async () => {
      const { client, seed } = memoryKeys();
      const apiId = await seed.api();
      const { keyId, key } = await seed.key({ apiId });
      expect(
        await rejection(client.verifyKey({ caller: verifier(), key, ratelimits: [{ name: "tokens" }] })),
      ).toEqual({
        reason: ErrorReason.PRECONDITION_FAILED,
        message: `ratelimit 'tokens' was requested but does not exist for key '${keyId}' and there is no identity connected`,
      });
    });

    it("accepts a named limit the key has, and an inline limit with limit and duration", async () => {
      const { client, seed } = memoryKeys();
      const apiId = await seed.api();
      const { key } = await seed.key({
        apiId,
        ratelimits: [{ name: "tokens", limit: 10n, duration: 1000n, autoApply: false }],
      });
      const res = await client.verifyKey({
        caller: verifier(),
        key,
        ratelimits: [{ name: "tokens" }, { name: "burst", limit: 5n, duration: 1000n }],
      });
      expect(res.code).toBe(VerifyCode.VALID);
    });
  });

  describe("cache", () => {
    it("sees a change at the next verification on every instance sharing the bus", async () => {
      const bus = new MemoryBus();
      const a = memoryKeys({ bus });
      const apiId = await a.seed.api();
      const { keyId, key, hash } = await a.seed.key({ apiId });
      expect((await a.client.verifyKey({ caller: verifier(), key })).code).toBe(VerifyCode.VALID);
      expect(a.deps.keyCache.peek("ws_1", hash)?.id).toBe(keyId);

      // Another instance changes the key in the shared store and says so on the bus.
      a.deps.store.patchKey(keyId, { enabled: false });
      const other = memoryKeys({ bus });
      keyChanged(other.deps, { workspaceId: "ws_1", hash, keyId });
      expect((await a.client.verifyKey({ caller: verifier(), key })).code).toBe(VerifyCode.DISABLED);
    });

    it("answers a repeated verification from the cache, without a store lookup", async () => {
      const { client, seed, deps } = memoryKeys();
      const apiId = await seed.api();
      const { key } = await seed.key({ apiId });
      let lookups = 0;
      const find = deps.store.findKeysByHash.bind(deps.store);
      deps.store.findKeysByHash = (wanted) => {
        lookups++;
        return find(wanted);
      };
      for (let i = 0; i < 3; i++) await client.verifyKey({ caller: verifier(), key });
      await client.verifyKey({ caller: verifier(), key: "wrong" });
      await client.verifyKey({ caller: verifier(), key: "wrong" });
      expect(lookups).toBe(2);
    });
  });
});

describe("verifyKey events", () => {
  function recorded() {
    const events: KeyVerified[] = [];
    // Each event as its message, and its bytes as JetStream would carry them read back: the same.
    const sink = new DirectEventSink((subject, _id, message) => {
      if (subject !== "events.keys.verified") return;
      const event = message as KeyVerified;
      expect(fromBinary(KeyVerifiedSchema, encodeKeyVerified(event))).toEqual(
        create(KeyVerifiedSchema, event),
      );
      events.push(event);
    });
    return { events, sink };
  }

  it("records each verification with its outcome and the credits it spent", async () => {
    const { events, sink } = recorded();
    const { client, seed, clock } = memoryKeys({ events: sink });
    const apiId = await seed.api();
    const { keyId, key } = await seed.key({ apiId, credits: 1, externalId: "user_1" });
    await client.verifyKey({ caller: verifier(), key, requestId: "req_1", tags: ["path=/a"] });
    await client.verifyKey({ caller: verifier(), key, requestId: "req_2" });
    expect(events.map((e) => [e.requestId, e.outcome, e.spentCredits])).toEqual([
      ["req_1", "VALID", 1n],
      ["req_2", "USAGE_EXCEEDED", 0n],
    ]);
    expect(events[0]).toMatchObject({
      time: BigInt(clock.now()),
      workspaceId: "ws_1",
      apiId,
      keyId,
      externalId: "user_1",
      tags: ["path=/a"],
    });
  });

  it("records nothing of a key the caller may not see", async () => {
    const { events, sink } = recorded();
    const { client, seed } = memoryKeys({ events: sink });
    const theirs = await seed.key({ apiId: await seed.api("ws_2"), workspaceId: "ws_2" });
    await client.verifyKey({ caller: verifier(), key: theirs.key, requestId: "req_3" });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ workspaceId: "ws_1", outcome: "NOT_FOUND", apiId: "", keyId: "" });
  });
});
