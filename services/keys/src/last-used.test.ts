import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { createLogger } from "@latchkey/runtime";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LastUsed } from "./last-used.ts";
import type { KeyUse } from "./store/keys-store.ts";
import { callerOf } from "./test-kit.ts";
import { verificationKit } from "./verify-test-kit.ts";

const log = createLogger("keys", "silent");

/** The uses each recordLastUsed call of the store carried. */
function spyOnWrites(kit: ReturnType<typeof verificationKit>): KeyUse[][] {
  const writes: KeyUse[][] = [];
  const store = kit.deps.store;
  const record = store.recordLastUsed.bind(store);
  store.recordLastUsed = async (uses) => {
    writes.push([...uses]);
    await record(uses);
  };
  return writes;
}

afterEach(() => {
  vi.useRealTimers();
});

describe("lastUsedAt", () => {
  it("answers the time of the key's last verification from getKey, before and after it is written", async () => {
    const kit = verificationKit();
    const { deps, keys, seed, verify, clock, admin } = kit;
    const { keyId, key } = await seed.key({ apiId: await seed.api() });
    expect((await keys.getKey({ caller: admin, keyId })).key?.lastUsedAt).toBeUndefined();

    await verify(key);
    clock.advance(1_500);
    await verify(key);
    const last = BigInt(clock.now());
    clock.advance(10_000);

    expect((await keys.getKey({ caller: admin, keyId })).key?.lastUsedAt).toBe(last);
    await deps.lastUsed.flush();
    expect((await deps.store.findKeyById(keyId))?.lastUsedAt).toBe(Number(last));
    expect((await keys.getKey({ caller: admin, keyId })).key?.lastUsedAt).toBe(last);
  });

  it("writes nothing per verification: every key verified since the last flush in one write", async () => {
    const kit = verificationKit();
    const writes = spyOnWrites(kit);
    const apiId = await kit.seed.api();
    const a = await kit.seed.key({ apiId });
    const b = await kit.seed.key({ apiId });
    for (let i = 0; i < 5; i++) {
      await kit.verify(a.key);
      await kit.verify(b.key);
      kit.clock.advance(10);
    }
    await kit.keys.verifyKeyBatch({
      callers: [kit.verifier],
      items: [{ callerIndex: 0, request: { key: a.key } }],
    });
    expect(writes).toEqual([]);

    await kit.deps.lastUsed.flush();
    expect(writes).toHaveLength(1);
    expect(writes[0]).toEqual([
      { keyId: a.keyId, at: kit.clock.now() },
      { keyId: b.keyId, at: kit.clock.now() - 10 },
    ]);
    await kit.deps.lastUsed.flush();
    expect(writes).toHaveLength(1);
  });

  it("never moves lastUsedAt back behind a later use another instance wrote", async () => {
    const { deps, keys, seed, verify, clock, admin } = verificationKit();
    const { keyId, key } = await seed.key({ apiId: await seed.api() });
    await verify(key);
    const later = clock.now() + 60_000;
    await deps.store.recordLastUsed([{ keyId, at: later }]);

    await deps.lastUsed.flush();

    expect((await deps.store.findKeyById(keyId))?.lastUsedAt).toBe(later);
    expect((await keys.getKey({ caller: admin, keyId })).key?.lastUsedAt).toBe(BigInt(later));
  });

  it("counts verifications of any outcome, and none the caller may not see", async () => {
    const { deps, keys, seed, verify, clock, admin } = verificationKit();
    const apiId = await seed.api();
    const disabled = await seed.key({ apiId });
    await keys.updateKey({ caller: admin, keyId: disabled.keyId, enabled: false });
    const unseen = await seed.key({ apiId });

    expect((await verify(disabled.key)).code).toBe(VerifyCode.DISABLED);
    const other = await keys.verifyKey({ caller: callerOf("ws_2", "api.*.verify_key"), key: unseen.key });
    expect(other.code).toBe(VerifyCode.NOT_FOUND);
    await deps.lastUsed.flush();

    expect((await deps.store.findKeyById(disabled.keyId))?.lastUsedAt).toBe(clock.now());
    expect((await deps.store.findKeyById(unseen.keyId))?.lastUsedAt).toBeNull();
  });

  it("answers lastUsedAt in listKeys, none for a key never verified", async () => {
    const { deps, keys, seed, verify, clock, admin } = verificationKit();
    const apiId = await seed.api();
    const used = await seed.key({ apiId });
    const unused = await seed.key({ apiId });
    await verify(used.key);
    await deps.lastUsed.flush();

    const { keys: listed } = await keys.listKeys({ caller: admin, apiId });
    const byId = new Map(listed.map((k) => [k.keyId, k.lastUsedAt]));
    expect(byId.get(used.keyId)).toBe(BigInt(clock.now()));
    expect(byId.get(unused.keyId)).toBeUndefined();
  });

  it("writes what is left on close()", async () => {
    const kit = verificationKit();
    const { keyId, key } = await kit.seed.key({ apiId: await kit.seed.api() });
    await kit.verify(key);

    await kit.deps.close();

    expect((await kit.deps.store.findKeyById(keyId))?.lastUsedAt).toBe(kit.clock.now());
  });

  it("flushes once a second on its own", async () => {
    vi.useFakeTimers();
    const writes: KeyUse[][] = [];
    const lastUsed = new LastUsed({ recordLastUsed: async (uses) => void writes.push([...uses]) }, log);
    lastUsed.record("key_1", 5);
    lastUsed.record("key_1", 3);
    await vi.advanceTimersByTimeAsync(999);
    expect(writes).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(writes).toEqual([[{ keyId: "key_1", at: 5 }]]);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(writes).toHaveLength(1);
    await lastUsed.close();
  });

  it("keeps what a failed write carried for the next flush, answering it meanwhile", async () => {
    let fail = true;
    const writes: KeyUse[][] = [];
    const lastUsed = new LastUsed(
      {
        recordLastUsed: async (uses) => {
          if (fail) throw new Error("database down");
          writes.push([...uses]);
        },
      },
      log,
      60_000,
    );
    lastUsed.record("key_1", 5);
    await lastUsed.flush();
    expect(lastUsed.latest({ id: "key_1", lastUsedAt: null })).toEqual({ id: "key_1", lastUsedAt: 5 });
    fail = false;
    lastUsed.record("key_2", 7);
    await lastUsed.flush();
    expect(writes).toEqual([
      [
        { keyId: "key_1", at: 5 },
        { keyId: "key_2", at: 7 },
      ],
    ]);
    await lastUsed.close();
  });
});
