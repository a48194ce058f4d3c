import { VerifyCode } from "@latchkey/proto/keys/v1/keys_pb";
import { createLogger, LoopProgress } from "@latchkey/runtime";
import { afterEach, describe, expect, it, vi } from "vitest";
import { callerOf } from "../testing/in-memory-keys.ts";
import { verificationKit } from "../testing/verification.ts";
import { LAST_USED_MAX_PENDING, LAST_USED_PER_FLUSH, LastUsed } from "./last-used.ts";
import type { KeyUse } from "./store/keys-store.ts";

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
    lastUsed.record("ws_1", "key_1", 5);
    lastUsed.record("ws_1", "key_1", 3);
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
    lastUsed.record("ws_1", "key_1", 5);
    await lastUsed.flush();
    expect(lastUsed.latest({ id: "key_1", lastUsedAt: null })).toEqual({ id: "key_1", lastUsedAt: 5 });
    fail = false;
    lastUsed.record("ws_1", "key_2", 7);
    await lastUsed.flush();
    expect(writes).toEqual([
      [
        { keyId: "key_1", at: 5 },
        { keyId: "key_2", at: 7 },
      ],
    ]);
    await lastUsed.close();
  });

  describe("shared by workspaces, saturated", () => {
    /** A store whose every statement takes `ms`, recording what each carried and how many ran at once. */
    function slowStore(ms: number) {
      const statements: KeyUse[][] = [];
      let running = 0;
      let most = 0;
      return {
        statements,
        most: () => most,
        recordLastUsed: async (uses: readonly KeyUse[]) => {
          running++;
          most = Math.max(most, running);
          await new Promise((r) => setTimeout(r, ms));
          statements.push([...uses]);
          running--;
        },
      };
    }

    it("holds at most 100,000 waiting keys of a workspace verifying 300,000, writes 10,000 of them a flush, and another workspace's in the first", async () => {
      const store = slowStore(5);
      const progress = new LoopProgress("test.last-used");
      const lastUsed = new LastUsed(store, log, 3_600_000, progress);
      for (let i = 0; i < 300_000; i++) lastUsed.record("ws_attacker", `key_a${i}`, 1_000 + i);
      for (let i = 0; i < 10; i++) lastUsed.record("ws_victim", `key_v${i}`, 2_000 + i);
      expect(lastUsed.waitingKeys("ws_attacker")).toBe(LAST_USED_MAX_PENDING);
      expect(lastUsed.waitingKeys("ws_victim")).toBe(10);

      await lastUsed.flush();
      const first = store.statements.flat();
      expect(first).toHaveLength(LAST_USED_PER_FLUSH + 10);
      expect(first.filter((u) => u.keyId.startsWith("key_v"))).toHaveLength(10);
      // Three statements of at most 5,000, each a unit of progress.
      expect(store.statements.map((s) => s.length)).toEqual([5_000, 5_000, 10]);
      expect(progress.marks).toBe(3);
      expect(lastUsed.waitingKeys("ws_attacker")).toBe(LAST_USED_MAX_PENDING - LAST_USED_PER_FLUSH);

      // The victim verifies again while the attacker's backlog drains: its key goes in the next flush.
      lastUsed.record("ws_victim", "key_v0", 9_000);
      await lastUsed.flush();
      expect(store.statements.slice(3).flat()).toContainEqual({ keyId: "key_v0", at: 9_000 });
      expect(progress.marks).toBe(6);

      await lastUsed.close();
      expect(lastUsed.waitingKeys()).toBe(0);
      expect(new Set(store.statements.flat().map((u) => u.keyId)).size).toBe(LAST_USED_MAX_PENDING + 10);
      expect(progress.marks).toBe(6 + 8 * 2);
      expect(store.most()).toBe(1);
    });

    it("starts no second flush while a slow one is under way, keeps moving, and marks each statement", async () => {
      const store = slowStore(200);
      const progress = new LoopProgress("test.last-used.slow");
      // A flush every 10 ms against statements of 200 ms.
      const lastUsed = new LastUsed(store, log, 10, progress);
      for (let i = 0; i < 30_000; i++) lastUsed.record(`ws_${i % 3}`, `key_${i}`, i);
      const started = Date.now();
      while (store.statements.length < 6 && Date.now() - started < 20_000) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(store.statements.length).toBeGreaterThanOrEqual(6);
      expect(progress.marks).toBeGreaterThanOrEqual(6);
      expect(store.most()).toBe(1);
      const at = progress.lastAt;
      // Nothing left: each tick finds nothing waiting and says so.
      while (lastUsed.waitingKeys() > 0 && Date.now() - started < 30_000) {
        await new Promise((r) => setTimeout(r, 20));
      }
      await new Promise((r) => setTimeout(r, 100));
      expect(progress.lastAt).toBeGreaterThan(at);
      expect(store.statements.flat()).toHaveLength(30_000);
      await lastUsed.close();
    });
  });
});
