import { ErrorReason, errorDetailOf } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { caller, harness, LIMITER, rejection } from "../../testing/in-memory-ratelimit.ts";

const MINUTE = 60_000n;
const limit = (owner: string, name: string, max: bigint, over: Record<string, unknown> = {}) => ({
  owner,
  name,
  limit: max,
  duration: MINUTE,
  ...over,
});
const group = (workspaceId: string, ...limits: ReturnType<typeof limit>[]) => ({ workspaceId, limits });
/** The harness clock stands at 2026-01-01T00:00:00.500Z: every one-minute window ends at 00:01:00. */
const RESET = BigInt(Date.UTC(2026, 0, 1, 0, 1, 0));

describe("RatelimitService.CheckNamedLimits", () => {
  it("counts each limit of a verification with its own cost and answers limit, remaining and reset per limit", async () => {
    const { client } = harness();
    const res = await client.checkNamedLimits({
      groups: [group("ws_1", limit("key_1", "requests", 10n), limit("id_1", "tokens", 100n, { cost: 30n }))],
    });
    expect(res.groups).toHaveLength(1);
    expect(res.groups[0]!.passed).toBe(true);
    expect(res.groups[0]!.results.map((r) => ({ ...r }))).toEqual([
      expect.objectContaining({ limit: 10n, remaining: 9n, reset: RESET, exceeded: false }),
      expect.objectContaining({ limit: 100n, remaining: 70n, reset: RESET, exceeded: false }),
    ]);
  });

  it("counts nothing of a verification when one of its limits is exceeded, marking only that one", async () => {
    const { client } = harness();
    await client.checkNamedLimits({ groups: [group("ws_1", limit("id_1", "tokens", 1n))] });
    const res = await client.checkNamedLimits({
      groups: [group("ws_1", limit("key_1", "requests", 10n), limit("id_1", "tokens", 1n))],
    });
    expect(res.groups[0]!.passed).toBe(false);
    expect(res.groups[0]!.results.map((r) => [r.exceeded, r.remaining])).toEqual([
      [false, 9n],
      [true, 0n],
    ]);
    const after = await client.checkNamedLimits({
      groups: [group("ws_1", limit("key_1", "requests", 10n, { cost: 0n }))],
    });
    expect(after.groups[0]!.results[0]!.remaining).toBe(10n);
  });

  it("answers the groups of one call independently, in order, each seeing the groups before it", async () => {
    const { client } = harness();
    const shared = limit("id_1", "requests", 2n);
    const res = await client.checkNamedLimits({
      groups: [
        group("ws_1", limit("key_a", "requests", 5n), shared),
        group("ws_1", limit("key_b", "requests", 5n), shared),
        group("ws_1", limit("key_c", "requests", 5n), shared),
        group("ws_1", limit("key_d", "requests", 5n)),
      ],
    });
    // Three keys of one identity share its limit of 2: the third verification is denied, the fourth has no identity.
    expect(res.groups.map((g) => g.passed)).toEqual([true, true, false, true]);
    expect(res.groups[2]!.results.map((r) => r.exceeded)).toEqual([false, true]);
    // key_c's own limit was not counted by its denied verification.
    const c = await client.checkNamedLimits({
      groups: [group("ws_1", limit("key_c", "requests", 5n, { cost: 0n }))],
    });
    expect(c.groups[0]!.results[0]!.remaining).toBe(5n);
  });

  it("keeps limits of the same name apart per owner, per workspace, and from standalone namespaces", async () => {
    const { client } = harness();
    const one = (ws: string, owner: string) => group(ws, limit(owner, "requests", 1n));
    const res = await client.checkNamedLimits({
      groups: [one("ws_1", "key_1"), one("ws_1", "key_2"), one("ws_2", "key_1"), one("ws_1", "key_1")],
    });
    expect(res.groups.map((g) => g.passed)).toEqual([true, true, true, false]);
    const standalone = await client.limit({
      caller: caller("ws_1", ...LIMITER),
      check: { namespace: "key_1", identifier: "requests", limit: 1n, duration: MINUTE },
    });
    expect(standalone.result?.success).toBe(true);
  });

  it("charges 1 when cost is unset, nothing at cost 0, and denies every check of a limit of 0", async () => {
    const { client } = harness();
    const res = await client.checkNamedLimits({
      groups: [
        group("ws_1", limit("key_1", "requests", 3n)),
        group("ws_1", limit("key_1", "requests", 3n, { cost: 0n })),
        group("ws_1", limit("key_1", "banned", 0n, { cost: 0n })),
      ],
    });
    expect(res.groups.map((g) => [g.passed, g.results[0]!.remaining])).toEqual([
      [true, 2n],
      [true, 2n],
      [false, 0n],
    ]);
  });

  it("passes a verification with no limits, counting nothing", async () => {
    const { client } = harness();
    const res = await client.checkNamedLimits({ groups: [group("ws_1")] });
    expect(res.groups.map((g) => ({ passed: g.passed, results: g.results }))).toEqual([
      { passed: true, results: [] },
    ]);
  });

  it("refuses a malformed limit with INVALID_INPUT naming its place, counting no group", async () => {
    const { client } = harness();
    const err = await rejection(
      client.checkNamedLimits({
        groups: [
          group("ws_1", limit("key_1", "requests", 1n)),
          group("ws_1", limit("key_1", "other", 5n), limit("key_1", "zero", 5n, { duration: 0n })),
        ],
      }),
      ErrorReason.INVALID_INPUT,
    );
    expect(errorDetailOf(err)?.violations.map((v) => v.location)).toEqual(["/groups/1/limits/1/duration"]);
    const after = await client.checkNamedLimits({ groups: [group("ws_1", limit("key_1", "requests", 1n))] });
    expect(after.groups[0]!.passed).toBe(true);
  });

  it("refuses a group without a workspace with INVALID_INPUT", async () => {
    const { client } = harness();
    const err = await rejection(
      client.checkNamedLimits({ groups: [group("", limit("key_1", "requests", 1n))] }),
      ErrorReason.INVALID_INPUT,
    );
    expect(errorDetailOf(err)?.violations.map((v) => v.location)).toEqual(["/groups/0/workspaceId"]);
  });

  it("names the first malformed field of a limit: owner, name, limit, duration or cost", async () => {
    const { client } = harness();
    const cases: [Record<string, unknown>, string][] = [
      [{ owner: "" }, "owner"],
      [{ name: "" }, "name"],
      [{ limit: -1n }, "limit"],
      [{ limit: 2n ** 53n }, "limit"],
      [{ duration: 0n }, "duration"],
      [{ duration: 2n ** 60n }, "duration"],
      [{ cost: -1n }, "cost"],
      [{ cost: 2n ** 53n }, "cost"],
      [{ name: "", limit: -1n }, "name"],
    ];
    for (const [over, field] of cases) {
      const err = await rejection(
        client.checkNamedLimits({ groups: [group("ws_1", limit("key_1", "requests", 1n, over))] }),
        ErrorReason.INVALID_INPUT,
      );
      expect(errorDetailOf(err)?.violations.map((v) => v.location)).toEqual([`/groups/0/limits/0/${field}`]);
    }
    // The largest values that are still integers JS holds exactly pass.
    const max = 2n ** 53n - 1n;
    const ok = await client.checkNamedLimits({
      groups: [group("ws_1", limit("key_1", "big", max, { cost: 0n, duration: max }))],
    });
    expect(ok.groups[0]!.passed).toBe(true);
  });
});
