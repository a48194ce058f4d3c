import { MemoryBus, registry } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { caller, floodNewCounters, harness, LIMITER, recordingLog } from "../testing/in-memory-ratelimit.ts";
import { counterKey } from "./checks.ts";
import { counterBytes } from "./limiter/sliding-windows.ts";
import { NamespaceCache } from "./namespaces.ts";
import { OverrideCache } from "./overrides.ts";

const DAY = 86_400_000n;
const MINUTE = 60_000n;
/** The harness clock stands at 2026-01-01T00:00:00.500Z: every daily window ends at the next midnight. */
const MIDNIGHT = BigInt(Date.UTC(2026, 0, 2));

const named = (workspaceId: string, owner: string, limit: bigint, over: Record<string, unknown> = {}) => ({
  workspaceId,
  limits: [{ owner, name: "requests", limit, duration: DAY, ...over }],
});
const standalone = (identifier: string, limit: bigint, over: Record<string, unknown> = {}) => ({
  namespace: "api",
  identifier,
  limit,
  duration: DAY,
  ...over,
});

async function refusals(reason: string): Promise<number> {
  const metric = registry.getSingleMetric("latchkey_ratelimit_counter_refusals_total");
  if (!metric) return Number.NaN;
  const values = (await metric.get()).values;
  return values.find((v) => v.labels["reason"] === reason)?.value ?? 0;
}

describe("one workspace's counters against another workspace's traffic", () => {
  it("a flood of new daily counters from workspace B (CheckNamedLimits, LimitBatch, Limit, MultiLimit) leaves A's counters exact", async () => {
    const { client, deps } = harness({ maxCounters: 1000, maxCountersPerWorkspace: 250 });
    const a = caller("ws_a", ...LIMITER);
    const b = caller("ws_b", ...LIMITER);
    // A: a key's named limit and a standalone identifier, 10 a day each, 7 used.
    for (let i = 0; i < 7; i++) {
      expect(
        (await client.checkNamedLimits({ groups: [named("ws_a", "key_a", 10n)] })).groups[0]!.passed,
      ).toBe(true);
      expect((await client.limit({ caller: a, check: standalone("user_1", 10n) })).result?.success).toBe(
        true,
      );
    }

    // B: 50 verification batches of 22 verifications with 3 new limits each, 20 coalesced
    // ratelimits.limit batches of 64 new identifiers, 20 limits and 20 multiLimits.
    await floodNewCounters(client, b, { verificationBatches: 50, limitBatches: 20, singles: 20 });
    expect(deps.windows.size).toBeLessThanOrEqual(1000);

    // A has exactly 3 left on both, then is denied.
    const left = await client.checkNamedLimits({ groups: [named("ws_a", "key_a", 10n, { cost: 0n })] });
    expect(left.groups[0]!.results[0]).toMatchObject({ remaining: 3n, reset: MIDNIGHT, exceeded: false });
    const leftStandalone = await client.limit({ caller: a, check: standalone("user_1", 10n, { cost: 0n }) });
    expect(leftStandalone.result).toMatchObject({ success: true, remaining: 3n, reset: MIDNIGHT });
    const passes: boolean[] = [];
    const standalonePasses: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      passes.push(
        (await client.checkNamedLimits({ groups: [named("ws_a", "key_a", 10n)] })).groups[0]!.passed,
      );
      standalonePasses.push(
        (await client.limit({ caller: a, check: standalone("user_1", 10n) })).result?.success ?? false,
      );
    }
    expect(passes).toEqual([true, true, true, false]);
    expect(standalonePasses).toEqual([true, true, true, false]);
  });

  it("a workspace at its bound is denied a new identifier (logged once a minute, counted), its existing identifiers count exactly, and others are unaffected", async () => {
    const { log, warnings } = recordingLog();
    const { client, clock } = harness({ maxCounters: 1000, maxCountersPerWorkspace: 5, log });
    const a = caller("ws_a", ...LIMITER);
    const before = await refusals("workspace");
    for (let i = 0; i < 5; i++) {
      const res = await client.limit({ caller: a, check: standalone(`user_${i}`, 3n) });
      expect(res.result).toMatchObject({ success: true, remaining: 2n });
    }

    // The sixth identifier would need a sixth counter: denied, as if its limit were reached.
    const refused = await client.limit({ caller: a, check: standalone("user_5", 3n) });
    expect(refused.result).toMatchObject({ success: false, limit: 3n, remaining: 0n, reset: MIDNIGHT });
    // So is a verification's named limit of the same workspace.
    const verification = await client.checkNamedLimits({ groups: [named("ws_a", "key_new", 3n)] });
    expect(verification.groups[0]).toMatchObject({
      passed: false,
      results: [{ exceeded: true, remaining: 0n }],
    });
    // A check of cost 0 needs no counter: it answers what a fresh identifier has.
    const peek = await client.limit({ caller: a, check: standalone("user_6", 3n, { cost: 0n }) });
    expect(peek.result).toMatchObject({ success: true, remaining: 3n });

    // The existing identifiers keep counting exactly: user_0 used 1 of 3.
    const next: [boolean, bigint][] = [];
    for (let i = 0; i < 3; i++) {
      const r = (await client.limit({ caller: a, check: standalone("user_0", 3n) })).result!;
      next.push([r.success, r.remaining]);
    }
    expect(next).toEqual([
      [true, 1n],
      [true, 0n],
      [false, 0n],
    ]);

    // Another workspace creates counters as before.
    const other = await client.limit({ caller: caller("ws_b", ...LIMITER), check: standalone("user_5", 3n) });
    expect(other.result).toMatchObject({ success: true, remaining: 2n });

    // One warning per workspace and minute, naming it; every refusal is counted.
    expect(await refusals("workspace")).toBe(before + 2);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.obj).toMatchObject({
      workspaceId: "ws_a",
      reason: "workspace",
      counters: 5,
      bound: 5,
    });
    await client.limit({ caller: a, check: standalone("user_7", 3n) });
    expect(warnings).toHaveLength(1);
    clock.advance(61_000);
    await client.limit({ caller: a, check: standalone("user_8", 3n) });
    expect(warnings).toHaveLength(2);
    // The second line says how many were refused since the first: key_new, user_7 and user_8.
    expect(warnings[1]!.obj).toMatchObject({ workspaceId: "ws_a", refused: 3 });
  });

  it("drops only counters whose windows have ended, and reuses their room", async () => {
    const { client, clock, deps } = harness({ maxCounters: 1000, maxCountersPerWorkspace: 5 });
    const a = caller("ws_a", ...LIMITER);
    // Four daily counters and one of a minute, each used once.
    for (let i = 0; i < 4; i++) await client.limit({ caller: a, check: standalone(`day_${i}`, 3n) });
    await client.limit({ caller: a, check: standalone("minute", 3n, { duration: MINUTE }) });
    expect((await client.limit({ caller: a, check: standalone("new_0", 3n) })).result?.success).toBe(false);

    // A minute later the minute's window is the previous one, still weighed: still held.
    clock.advance(60_000);
    expect((await client.limit({ caller: a, check: standalone("new_0", 3n) })).result?.success).toBe(false);
    // Another minute and it has ended: its room goes to one new identifier, and only one.
    clock.advance(60_000);
    expect((await client.limit({ caller: a, check: standalone("new_0", 3n) })).result).toMatchObject({
      success: true,
      remaining: 2n,
    });
    expect((await client.limit({ caller: a, check: standalone("new_1", 3n) })).result?.success).toBe(false);
    expect(deps.windows.size).toBe(5);
    // The daily counters were kept, with their counts.
    for (let i = 0; i < 4; i++) {
      const r = await client.limit({ caller: a, check: standalone(`day_${i}`, 3n, { cost: 0n }) });
      expect(r.result?.remaining).toBe(2n);
    }
  });

  it("holds the global bound across workspaces, one workspace never taking more than the room left", async () => {
    const { client, deps } = harness({ maxCounters: 100, maxCountersPerWorkspace: 100 });
    const flood = async (ws: string, count: number) => {
      const res = await client.checkNamedLimits({
        groups: Array.from({ length: count }, (_, i) => named(ws, `key_${i}`, 10n)),
      });
      return res.groups.filter((g) => g.passed).length;
    };
    // Alone, B takes half the table; A then takes half of what is left.
    expect(await flood("ws_b", 300)).toBe(50);
    expect(await flood("ws_a", 300)).toBe(25);
    for (let w = 0; w < 20; w++) await flood(`ws_${w}`, 50);
    expect(deps.windows.size).toBeLessThanOrEqual(100);
    // What B and A counted before is intact.
    const b = await client.checkNamedLimits({ groups: [named("ws_b", "key_0", 10n, { cost: 0n })] });
    expect(b.groups[0]!.results[0]!.remaining).toBe(9n);
  });
});

describe("one workspace's counters in bytes against another workspace's traffic", () => {
  it("a flood of the longest identifiers from workspace B holds at most half the bytes left, and A is still served exactly", async () => {
    const maxCounterBytes = 2 * 1024 * 1024;
    const { client, deps } = harness({
      maxCounters: 1_000_000,
      maxCountersPerWorkspace: 250_000,
      maxCounterBytes,
    });
    const a = caller("ws_a", ...LIMITER);
    const b = caller("ws_b", ...LIMITER);
    for (let i = 0; i < 7; i++) {
      expect((await client.limit({ caller: a, check: standalone("user_1", 10n) })).result?.success).toBe(
        true,
      );
    }
    const aBytes = deps.windows.heldBy("ws_a").bytes;
    // B: 5,000 new identifiers of 512 characters beyond Latin-1 (two bytes each in the heap), 64 a batch.
    const longest = (i: number) => `${i}`.padStart(512, "€");
    let passed = 0;
    for (let n = 0; n < 5_000; n += 64) {
      const res = await client.limitBatch({
        callers: [b],
        items: Array.from({ length: 64 }, (_, i) => ({
          callerIndex: 0,
          request: { check: standalone(longest(n + i), 1000n) },
        })),
      });
      passed += res.results.filter(
        (r) => r.result.case === "response" && r.result.value.result?.success,
      ).length;
    }
    const each = counterBytes(
      `${counterKey("ws_b", (await deps.store.namespaceByName("ws_b", "api"))!.id, longest(0))}\u001f${DAY}`,
    );
    expect(passed).toBe(Math.floor((maxCounterBytes - aBytes) / 2 / each));
    expect(deps.windows.heldBy("ws_b")).toEqual({ counters: passed, bytes: passed * each });
    expect(deps.windows.bytes).toBeLessThanOrEqual(maxCounterBytes);

    // A: 3 left, then denied; and A's new identifiers, the longest too, are counted.
    const passes: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      passes.push(
        (await client.limit({ caller: a, check: standalone("user_1", 10n) })).result?.success ?? false,
      );
    }
    expect(passes).toEqual([true, true, true, false]);
    expect((await client.limit({ caller: a, check: standalone(longest(1), 10n) })).result).toMatchObject({
      success: true,
      remaining: 9n,
    });
  });
});

describe("the namespace and override caches against another workspace's traffic", () => {
  it("answer a workspace the same after another workspace's namespaces pushed its entries out: they are loaded again", async () => {
    const bus = new MemoryBus();
    const { client, deps } = harness({ bus });
    // Room for two namespaces (id and name each) and two namespaces' overrides.
    deps.namespaces = new NamespaceCache(deps.store, 4);
    deps.overrides = new OverrideCache(deps.store, bus, 2);
    const a = caller("ws_a", ...LIMITER, "ratelimit.*.set_override");
    await client.limit({ caller: a, check: standalone("vip", 1n) });
    await client.setOverride({ caller: a, namespace: "api", identifier: "vip", limit: 5n, duration: DAY });
    for (let i = 0; i < 2; i++) {
      const r = await client.limit({ caller: a, check: standalone("vip", 1n) });
      expect(r.result).toMatchObject({ success: true, limit: 5n });
    }
    const ns = (await deps.store.namespaceByName("ws_a", "api"))!;

    const b = caller("ws_b", ...LIMITER);
    for (let i = 0; i < 20; i++) {
      await client.limit({ caller: b, check: { ...standalone("x", 1n), namespace: `ns_${i}` } });
    }
    expect(deps.namespaces.peek("ws_a", "api")).toBeUndefined();
    expect(deps.overrides.peek(ns.id)).toBeUndefined();

    // The same namespace (so the same counter: 3 of the override's 5 used) and the same override.
    const after = await client.limit({ caller: a, check: standalone("vip", 1n, { cost: 0n }) });
    expect(after.result).toMatchObject({ success: true, limit: 5n, remaining: 2n });
    expect(after.result?.overrideId).toMatch(/^rlor_/);
  });
});
