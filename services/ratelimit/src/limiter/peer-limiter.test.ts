import { createLogger, TestClock } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { PeerLimiter } from "./peer-limiter.ts";
import { Rendezvous } from "./rendezvous.ts";
import { type CounterCheck, SlidingWindows } from "./sliding-windows.ts";

const log = createLogger("ratelimit", "silent");
const check = (key: string, limit: number, cost = 1): CounterCheck => ({
  key,
  limit,
  duration: 60_000,
  cost,
});

describe("the peer limiter without a reachable peer in the way", () => {
  it("counts exactly L of N in place when the peer list is this replica alone", async () => {
    const windows = new SlidingWindows(new TestClock());
    const self = "http://ratelimit-0:7072";
    const limiter = new PeerLimiter({ self, peers: [self] }, windows, log);
    const outcomes = await limiter.apply(Array.from({ length: 50 }, () => [check("ws\u001fns\u001fu", 20)]));
    expect(outcomes.filter((o) => o[0]!.success)).toHaveLength(20);
    // A group is still all or nothing: the second check fails, the first counts nothing.
    const [group] = await limiter.apply([
      [check("ws\u001fns\u001fother", 5), check("ws\u001fns\u001fu", 20)],
    ]);
    expect(group!.map((o) => o.success)).toEqual([true, false]);
    expect((await limiter.apply([[check("ws\u001fns\u001fother", 5, 0)]]))[0]![0]!.remaining).toBe(5);
  });

  it("counts a group whose counters this replica all owns before apply returns, calling no peer", async () => {
    const windows = new SlidingWindows(new TestClock());
    const self = "http://ratelimit-0:7072";
    const other = "http://ratelimit-1:7072";
    const ring = new Rendezvous([self, other]);
    const mine: string[] = [];
    for (let i = 0; mine.length < 2; i++) if (ring.owner(`k${i}`) === self) mine.push(`k${i}`);
    // A transport that fails the test if the other replica is ever called.
    const limiter = new PeerLimiter({ self, peers: [self, other] }, windows, log, () => ({
      unary: () => {
        throw new Error("no peer may be called");
      },
      stream: () => {
        throw new Error("no peer may be called");
      },
    }));
    const pending = limiter.apply([[check(mine[0]!, 1), check(mine[1]!, 1)]]);
    // Counted already, synchronously: the next group sees both counters full.
    expect(windows.size).toBe(2);
    expect((await pending)[0]!.map((o) => o.success)).toEqual([true, true]);
    expect((await limiter.apply([[check(mine[0]!, 1)]]))[0]![0]!.success).toBe(false);
  });
});
