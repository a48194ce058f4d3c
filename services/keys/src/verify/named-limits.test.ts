import { Code, ConnectError } from "@connectrpc/connect";
import type { CheckNamedLimitsRequest } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { createLogger } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import type { KeysDeps } from "../deps.ts";
import type { CachedKey } from "../store/keys-store.ts";
import type { ResolvedIdentity } from "./identity-cache.ts";
import { type AppliedLimit, LimitQueue, limitsToCheck, MAX_CALL_GROUPS } from "./named-limits.ts";

const limit = (name: string, autoApply: boolean) => ({
  id: `rl_${name}`,
  name,
  limit: 10,
  duration: 1_000,
  autoApply,
});
const key = (ratelimits: CachedKey["ratelimits"]) => ({ id: "key_1", ratelimits }) as CachedKey;
const identity = (ratelimits: ResolvedIdentity["ratelimits"]): ResolvedIdentity => ({
  id: "id_1",
  externalId: "user_1",
  metaJson: undefined,
  ratelimits,
});

describe("limitsToCheck", () => {
  it("answers the same list for a key record and identity record without limits named in the request", () => {
    const k = key([limit("calls", true), limit("named", false)]);
    const i = identity([limit("shared", true)]);
    const first = limitsToCheck(k, i, []);
    expect(first.map((l) => `${l.name}:${l.owner}`)).toEqual(["calls:key_1", "shared:id_1"]);
    expect(limitsToCheck(k, i, [])).toBe(first);
  });

  it("works them out again for another identity record (the identity changed)", () => {
    const k = key([limit("calls", true)]);
    const first = limitsToCheck(k, identity([]), []);
    const changed = limitsToCheck(k, identity([limit("shared", true)]), []);
    expect(changed).not.toBe(first);
    expect(changed.map((l) => l.name)).toEqual(["calls", "shared"]);
    expect(limitsToCheck(k, null, []).map((l) => l.name)).toEqual(["calls"]);
  });

  it("works out a request naming limits on its own, with its costs", () => {
    const k = key([limit("calls", true), limit("named", false)]);
    const named = limitsToCheck(k, null, [{ name: "named", cost: 3, custom: undefined }]);
    expect(named.map((l) => `${l.name}:${l.cost}`)).toEqual(["calls:1", "named:3"]);
    expect(limitsToCheck(k, null, [])).not.toContain(named[1]);
  });
});

describe("LimitQueue", () => {
  const applied = (name: string): AppliedLimit[] => [
    { id: `rl_${name}`, name, limit: 10, duration: 1_000, autoApply: true, owner: "key_1", cost: 1 },
  ];
  const group = (name: string) => ({ workspaceId: "ws_1", limits: applied(name) });

  /** A ratelimit service that holds each call until released, passing the limits named "ok…" and failing on "down". */
  function heldLimiter(failOpen = true) {
    const calls: string[][] = [];
    const held: (() => void)[] = [];
    const deps = {
      ratelimitFailOpen: failOpen,
      log: createLogger("keys", "silent"),
      ratelimit: {
        async checkNamedLimits(req: CheckNamedLimitsRequest) {
          const names = req.groups.map((g) => g.limits[0]!.name);
          calls.push(names);
          await new Promise<void>((release) => held.push(release));
          if (names.includes("down")) throw new ConnectError("unavailable", Code.Unavailable);
          return { groups: names.map((n) => ({ passed: n.startsWith("ok"), results: [] })) };
        },
      },
    } as unknown as KeysDeps;
    return { queue: new LimitQueue(deps), calls, held };
  }

  const turn = () => new Promise((r) => setImmediate(r));

  it("sends the batches that arrive while a call is out together in the next call, in arrival order", async () => {
    const { queue, calls, held } = heldLimiter();
    const a = queue.check([group("ok-a")]);
    await turn();
    const b = queue.check([group("ok-b1"), group("no-b2")]);
    const c = queue.check([group("no-c")]);
    await turn();
    expect(calls).toEqual([["ok-a"]]);
    held.shift()!();
    expect((await a).map((v) => v.passed)).toEqual([true]);
    await turn();
    expect(calls).toEqual([["ok-a"], ["ok-b1", "no-b2", "no-c"]]);
    held.shift()!();
    expect((await b).map((v) => v.passed)).toEqual([true, false]);
    expect((await c).map((v) => v.passed)).toEqual([false]);
    // Idle again: the next batch leaves at once, alone.
    const d = queue.check([group("ok-d")]);
    await turn();
    expect(calls).toHaveLength(3);
    held.shift()!();
    expect((await d).map((v) => v.passed)).toEqual([true]);
  });

  it("carries at most MAX_CALL_GROUPS groups a call, whole batches in order; a larger batch goes alone", async () => {
    const { queue, calls, held } = heldLimiter();
    const first = queue.check([group("ok-first")]);
    await turn();
    const half = (name: string) => Array.from({ length: MAX_CALL_GROUPS / 2 }, () => group(name));
    const waiting = [
      queue.check(half("ok-a")),
      queue.check(half("ok-b")),
      queue.check([group("ok-c")]),
      queue.check(Array.from({ length: MAX_CALL_GROUPS + 1 }, () => group("ok-d"))),
    ];
    for (let i = 0; i < 4; i++) {
      await turn();
      held.shift()!();
    }
    await first;
    const answered = await Promise.all(waiting);
    expect(answered.map((a) => a.length)).toEqual([
      MAX_CALL_GROUPS / 2,
      MAX_CALL_GROUPS / 2,
      1,
      MAX_CALL_GROUPS + 1,
    ]);
    expect(calls.map((c) => c.length)).toEqual([1, MAX_CALL_GROUPS, 1, MAX_CALL_GROUPS + 1]);
    expect(calls[1]![0]).toBe("ok-a");
    expect(calls[1]![MAX_CALL_GROUPS - 1]).toBe("ok-b");
  });

  it("failing closed, refuses every batch of a failed call and still sends the ones queued behind it", async () => {
    const { queue, calls, held } = heldLimiter(false);
    const a = queue.check([group("down")]);
    await turn();
    const b = queue.check([group("ok-b")]);
    held.shift()!();
    await expect(a).rejects.toThrow(/retry shortly/);
    await turn();
    expect(calls).toEqual([["down"], ["ok-b"]]);
    held.shift()!();
    expect((await b).map((v) => v.passed)).toEqual([true]);
  });

  it("failing open, passes every batch of a call the limiter did not answer", async () => {
    const { queue, held } = heldLimiter(true);
    const a = queue.check([group("down"), group("no-x")]);
    await turn();
    held.shift()!();
    expect(await a).toEqual([
      { passed: true, results: [] },
      { passed: true, results: [] },
    ]);
  });
});
