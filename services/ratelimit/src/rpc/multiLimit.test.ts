import { ErrorReason, errorDetailOf } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { caller, harness, LIMITER, rejection } from "../../testing/in-memory-ratelimit.ts";

const check = (identifier: string, limit: bigint, over: Record<string, unknown> = {}) => ({
  namespace: "api.requests",
  identifier,
  limit,
  duration: 1000n,
  ...over,
});

describe("ratelimit.multiLimit", () => {
  it("passes and counts every check when all pass", async () => {
    const { client } = harness();
    const c = caller("ws_1", ...LIMITER);
    const res = await client.multiLimit({ caller: c, checks: [check("a", 5n), check("b", 2n)] });
    expect(res.passed).toBe(true);
    expect(res.results.map((r) => [r.identifier, r.success, r.remaining])).toEqual([
      ["a", true, 4n],
      ["b", true, 1n],
    ]);
  });

  it("counts nothing when one check fails, each result reporting its own outcome", async () => {
    const { client } = harness();
    const c = caller("ws_1", ...LIMITER);
    await client.limit({ caller: c, check: check("b", 1n) }); // b is now at its limit
    const res = await client.multiLimit({ caller: c, checks: [check("a", 5n), check("b", 1n)] });
    expect(res.passed).toBe(false);
    expect(res.results.map((r) => r.success)).toEqual([true, false]);
    expect(res.results[1]!.remaining).toBe(0n);
    // a was not counted by the failed call: a cost-0 check still sees all 5.
    const a = await client.limit({ caller: c, check: check("a", 5n, { cost: 0n }) });
    expect(a.result?.remaining).toBe(5n);
  });

  it("spans namespaces, creating each on first use", async () => {
    const { client, deps } = harness();
    const c = caller("ws_1", ...LIMITER);
    const res = await client.multiLimit({
      caller: c,
      checks: [check("a", 1n, { namespace: "one" }), check("a", 1n, { namespace: "two" })],
    });
    expect(res.passed).toBe(true);
    expect(await deps.store.namespaceByName("ws_1", "two")).toBeDefined();
  });

  it("answers 403 when any namespace would need creating without ratelimit.*.create_namespace", async () => {
    const { client } = harness();
    await client.limit({ caller: caller("ws_1", ...LIMITER), check: check("a", 1n) });
    await rejection(
      client.multiLimit({
        caller: caller("ws_1", "ratelimit.*.limit"),
        checks: [check("a", 5n), check("a", 5n, { namespace: "new" })],
      }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
  });

  it("answers 400 for no checks, more than 100, or a bad field naming its index", async () => {
    const { client } = harness();
    const c = caller("ws_1", ...LIMITER);
    await rejection(client.multiLimit({ caller: c, checks: [] }), ErrorReason.INVALID_INPUT);
    await rejection(
      client.multiLimit({ caller: c, checks: Array.from({ length: 101 }, (_, i) => check(`u${i}`, 1n)) }),
      ErrorReason.INVALID_INPUT,
    );
    const err = await rejection(
      client.multiLimit({ caller: c, checks: [check("a", 1n), check("b", 1n, { duration: 10n })] }),
      ErrorReason.INVALID_INPUT,
    );
    expect(errorDetailOf(err)?.violations[0]?.location).toBe("/1/duration");
  });
});
