import { ErrorReason, errorDetailOf, MemoryBus } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { caller, harness, LIMITER, rejection } from "../../testing/in-memory-ratelimit.ts";
import { MemoryRatelimitStore } from "../store/memory-ratelimit-store.ts";

const check = (over: Record<string, unknown> = {}) => ({
  namespace: "api.requests",
  identifier: "user_1",
  limit: 3n,
  duration: 1000n,
  ...over,
});

describe("ratelimits.limit", () => {
  it("creates the namespace on first use and answers success with limit, remaining and the window's end", async () => {
    const { client, deps, clock } = harness();
    const res = await client.limit({ caller: caller("ws_1", ...LIMITER), check: check() });
    const windowEnd = Math.floor(clock.now() / 1000) * 1000 + 1000;
    expect(res.result).toMatchObject({
      namespace: "api.requests",
      identifier: "user_1",
      success: true,
      limit: 3n,
      remaining: 2n,
      reset: BigInt(windowEnd),
    });
    expect(res.result?.overrideId).toBeUndefined();
    expect((await deps.store.namespaceByName("ws_1", "api.requests"))?.id).toMatch(/^rlns_/);
  });

  it("denies once the limit is reached, with success false and remaining 0", async () => {
    const { client } = harness();
    const c = caller("ws_1", ...LIMITER);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await client.limit({ caller: c, check: check() })).result!);
    expect(answers.map((a) => a.success)).toEqual([true, true, true, false]);
    expect(answers.map((a) => a.remaining)).toEqual([2n, 1n, 0n, 0n]);
  });

  it("checks without consuming when cost is 0, and spends the given cost otherwise", async () => {
    const { client } = harness();
    const c = caller("ws_1", ...LIMITER);
    expect((await client.limit({ caller: c, check: check({ cost: 0n }) })).result).toMatchObject({
      success: true,
      remaining: 3n,
    });
    expect((await client.limit({ caller: c, check: check({ cost: 2n }) })).result?.remaining).toBe(1n);
    expect((await client.limit({ caller: c, check: check({ cost: 2n }) })).result?.success).toBe(false);
    expect((await client.limit({ caller: c, check: check({ cost: 0n }) })).result).toMatchObject({
      success: true,
      remaining: 1n,
    });
  });

  it("weights the previous window by the part still inside the sliding window", async () => {
    const { client, clock } = harness();
    const c = caller("ws_1", ...LIMITER);
    const at = Date.UTC(2026, 0, 1, 0, 0, 10);
    clock.set(at);
    for (let i = 0; i < 10; i++) await client.limit({ caller: c, check: check({ limit: 10n }) });
    clock.set(at + 1000 + 400); // 40% into the next window: floor(10 × 0.6) = 6 still count
    const res = await client.limit({ caller: c, check: check({ limit: 10n }) });
    expect(res.result).toMatchObject({ success: true, remaining: 3n, reset: BigInt(at + 2000) });
  });

  it("accepts the namespace's rlns_ id as well as its name", async () => {
    const { client, deps } = harness();
    const c = caller("ws_1", ...LIMITER);
    await client.limit({ caller: c, check: check() });
    const ns = (await deps.store.namespaceByName("ws_1", "api.requests"))!;
    const res = await client.limit({ caller: c, check: check({ namespace: ns.id }) });
    expect(res.result).toMatchObject({ success: true, remaining: 1n });
  });

  it("applies an exact override before any wildcard, replacing limit and duration", async () => {
    const { client } = harness();
    const c = caller("ws_1", ...LIMITER, "ratelimit.*.set_override");
    await client.limit({ caller: c, check: check() });
    const wildcard = await client.setOverride({
      caller: c,
      namespace: "api.requests",
      identifier: "user_*",
      limit: 50n,
      duration: 60_000n,
    });
    const exact = await client.setOverride({
      caller: c,
      namespace: "api.requests",
      identifier: "user_1",
      limit: 7n,
      duration: 2000n,
    });
    const one = (await client.limit({ caller: c, check: check({ identifier: "user_1" }) })).result!;
    expect(one).toMatchObject({ success: true, limit: 7n, remaining: 6n, overrideId: exact.overrideId });
    expect(Number(one.reset) % 2000).toBe(0);
    const two = (await client.limit({ caller: c, check: check({ identifier: "user_2" }) })).result!;
    expect(two).toMatchObject({ success: true, limit: 50n, remaining: 49n, overrideId: wildcard.overrideId });
    expect(Number(two.reset) % 60_000).toBe(0);
    const other = (await client.limit({ caller: c, check: check({ identifier: "admin" }) })).result!;
    expect(other).toMatchObject({ limit: 3n, remaining: 2n });
    expect(other.overrideId).toBeUndefined();
  });

  it("applies the most specific of several matching wildcards", async () => {
    const { client } = harness();
    const c = caller("ws_1", ...LIMITER, "ratelimit.*.set_override");
    await client.limit({ caller: c, check: check() });
    const set = (identifier: string, limit: bigint) =>
      client.setOverride({ caller: c, namespace: "api.requests", identifier, limit, duration: 1000n });
    await set("*", 1n);
    await set("*@acme.com", 2n);
    const specific = await set("*@eu.acme.com", 3n);
    const res = await client.limit({ caller: c, check: check({ identifier: "ann@eu.acme.com" }) });
    expect(res.result).toMatchObject({ limit: 3n, overrideId: specific.overrideId });
    expect(
      (await client.limit({ caller: c, check: check({ identifier: "bo@acme.com" }) })).result?.limit,
    ).toBe(2n);
    expect((await client.limit({ caller: c, check: check({ identifier: "x" }) })).result?.limit).toBe(1n);
  });

  it("always denies an identifier whose override has limit 0, even at cost 0", async () => {
    const { client } = harness();
    const c = caller("ws_1", ...LIMITER, "ratelimit.*.set_override");
    await client.limit({ caller: c, check: check() });
    const ban = await client.setOverride({
      caller: c,
      namespace: "api.requests",
      identifier: "banned",
      limit: 0n,
      duration: 1000n,
    });
    for (const cost of [1n, 0n]) {
      const res = await client.limit({ caller: c, check: check({ identifier: "banned", cost }) });
      expect(res.result).toMatchObject({
        success: false,
        limit: 0n,
        remaining: 0n,
        overrideId: ban.overrideId,
      });
    }
  });

  it("applies an override change made on another replica at that replica's next check", async () => {
    // Two replicas share the database and the bus, each with its own caches.
    const store = new MemoryRatelimitStore();
    const bus = new MemoryBus();
    const one = harness({ store, bus });
    const two = harness({ store, bus });
    const c = caller("ws_1", ...LIMITER, "ratelimit.*.set_override", "ratelimit.*.delete_override");
    expect((await two.client.limit({ caller: c, check: check() })).result?.limit).toBe(3n); // caches "no overrides"
    await one.client.setOverride({
      caller: c,
      namespace: "api.requests",
      identifier: "user_1",
      limit: 9n,
      duration: 1000n,
    });
    expect((await two.client.limit({ caller: c, check: check() })).result?.limit).toBe(9n);
    await one.client.deleteOverride({ caller: c, namespace: "api.requests", identifier: "user_1" });
    expect((await two.client.limit({ caller: c, check: check() })).result?.limit).toBe(3n);
  });

  it("answers 403 INSUFFICIENT_PERMISSIONS to ratelimit.*.limit alone for a namespace that does not exist yet", async () => {
    const { client, deps } = harness();
    const err = await rejection(
      client.limit({ caller: caller("ws_1", "ratelimit.*.limit"), check: check() }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
    expect(err.message).toContain("ratelimit.*.create_namespace");
    expect(await deps.store.namespaceByName("ws_1", "api.requests")).toBeUndefined();
  });

  it("lets ratelimit.<namespaceId>.limit limit in that namespace only", async () => {
    const { client, deps } = harness();
    await client.limit({ caller: caller("ws_1", ...LIMITER), check: check() });
    await client.limit({ caller: caller("ws_1", ...LIMITER), check: check({ namespace: "other" }) });
    const ns = (await deps.store.namespaceByName("ws_1", "api.requests"))!;
    const scoped = caller("ws_1", `ratelimit.${ns.id}.limit`);
    expect((await client.limit({ caller: scoped, check: check() })).result?.success).toBe(true);
    await rejection(
      client.limit({ caller: scoped, check: check({ namespace: "other" }) }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
  });

  it("answers 403 to a root key without any limit permission", async () => {
    const { client } = harness();
    await client.limit({ caller: caller("ws_1", ...LIMITER), check: check() });
    await rejection(
      client.limit({ caller: caller("ws_1", "ratelimit.*.set_override"), check: check() }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
  });

  it("answers 404 NAMESPACE_NOT_FOUND for an unknown rlns_ id and never creates it", async () => {
    const { client } = harness();
    await rejection(
      client.limit({ caller: caller("ws_1", ...LIMITER), check: check({ namespace: "rlns_unknown" }) }),
      ErrorReason.NAMESPACE_NOT_FOUND,
    );
  });

  it("keeps workspaces apart: same name, separate counters; another workspace's id is not found", async () => {
    const { client, deps } = harness();
    const one = caller("ws_1", ...LIMITER);
    const two = caller("ws_2", ...LIMITER);
    for (let i = 0; i < 3; i++) await client.limit({ caller: one, check: check() });
    expect((await client.limit({ caller: one, check: check() })).result?.success).toBe(false);
    expect((await client.limit({ caller: two, check: check() })).result).toMatchObject({
      success: true,
      remaining: 2n,
    });
    const ns1 = (await deps.store.namespaceByName("ws_1", "api.requests"))!;
    await rejection(
      client.limit({ caller: two, check: check({ namespace: ns1.id }) }),
      ErrorReason.NAMESPACE_NOT_FOUND,
    );
  });

  it("answers 400 INVALID_INPUT naming the field for out-of-range input", async () => {
    const { client } = harness();
    const c = caller("ws_1", ...LIMITER);
    const cases: [Record<string, unknown>, string][] = [
      [{ namespace: "" }, "/namespace"],
      [{ identifier: "x".repeat(513) }, "/identifier"],
      [{ limit: 0n }, "/limit"],
      [{ duration: 999n }, "/duration"],
      [{ duration: 2_592_000_001n }, "/duration"],
      [{ cost: -1n }, "/cost"],
    ];
    for (const [over, location] of cases) {
      const err = await rejection(client.limit({ caller: c, check: check(over) }), ErrorReason.INVALID_INPUT);
      expect(err.message, location).toContain("must");
      expect(errorDetailOf(err)?.violations[0]?.location).toBe(location);
    }
  });

  it("lets exactly L of N > L concurrent checks through (L=100, N=500)", async () => {
    const { client } = harness();
    const c = caller("ws_1", ...LIMITER);
    const answers = await Promise.all(
      Array.from({ length: 500 }, () =>
        client.limit({ caller: c, check: check({ identifier: "hot", limit: 100n, duration: 60_000n }) }),
      ),
    );
    expect(answers.filter((a) => a.result?.success).length).toBe(100);
  }, 20_000); // 500 calls through the router transport: slow on a loaded machine, not wrong
});
