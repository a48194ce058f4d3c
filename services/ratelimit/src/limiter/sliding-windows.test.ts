import { TestClock } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { recordingLog } from "../../testing/in-memory-ratelimit.ts";
import {
  COUNTER_OVERHEAD_BYTES,
  type CounterCheck,
  counterBytes,
  SlidingWindows,
} from "./sliding-windows.ts";

const SECOND = 1000;
const start = Date.UTC(2026, 0, 1); // a multiple of every duration used here
const check = (over: Partial<CounterCheck> = {}): CounterCheck => ({
  key: "ws\u001fns\u001fuser",
  limit: 10,
  duration: SECOND,
  cost: 1,
  ...over,
});

describe("sliding windows", () => {
  it("counts up to the limit in one window, then denies with remaining 0 and reset at the window's end", () => {
    const clock = new TestClock(start + 100);
    const w = new SlidingWindows(clock);
    const outcomes = Array.from({ length: 4 }, () => w.apply([check({ limit: 3 })])[0]!);
    expect(outcomes.map((o) => o.success)).toEqual([true, true, true, false]);
    expect(outcomes.map((o) => o.remaining)).toEqual([2, 1, 0, 0]);
    expect(outcomes[3]).toEqual({
      success: false,
      refused: false,
      limit: 3,
      remaining: 0,
      reset: start + SECOND,
    });
  });

  it("weights the previous window by the part of it still inside the sliding window", () => {
    const clock = new TestClock(start + 100);
    const w = new SlidingWindows(clock);
    for (let i = 0; i < 10; i++) expect(w.apply([check()])[0]!.success).toBe(true);
    // 25% into the next window: floor(10 × 0.75) = 7 still count, so 3 more fit.
    clock.set(start + SECOND + 250);
    const next = Array.from({ length: 4 }, () => w.apply([check()])[0]!);
    expect(next.map((o) => o.success)).toEqual([true, true, true, false]);
    expect(next[0]!.remaining).toBe(2);
    // 75% in: floor(10 × 0.25) = 2 from before plus the 3 counted now leave 5.
    clock.set(start + SECOND + 750);
    expect(w.apply([check({ cost: 0 })])[0]).toMatchObject({ success: true, remaining: 5 });
  });

  it("forgets windows older than the previous one", () => {
    const clock = new TestClock(start);
    const w = new SlidingWindows(clock);
    for (let i = 0; i < 10; i++) w.apply([check()]);
    clock.set(start + 2 * SECOND);
    expect(w.apply([check({ cost: 0 })])[0]).toMatchObject({ success: true, remaining: 10 });
  });

  it("checks without consuming at cost 0, and passes at cost 0 exactly at the limit", () => {
    const w = new SlidingWindows(new TestClock(start));
    for (let i = 0; i < 10; i++) w.apply([check()]);
    expect(w.apply([check({ cost: 0 })])[0]).toMatchObject({ success: true, remaining: 0 });
    expect(w.apply([check({ cost: 0 })])[0]).toMatchObject({ success: true, remaining: 0 });
    expect(w.apply([check()])[0]).toMatchObject({ success: false, remaining: 0 });
  });

  it("denies a cost larger than what remains and counts nothing for it", () => {
    const w = new SlidingWindows(new TestClock(start));
    w.apply([check({ cost: 8 })]);
    expect(w.apply([check({ cost: 3 })])[0]!.success).toBe(false);
    expect(w.apply([check({ cost: 2 })])[0]).toMatchObject({ success: true, remaining: 0 });
  });

  it("always denies a limit of 0, even a check that costs nothing", () => {
    const w = new SlidingWindows(new TestClock(start));
    expect(w.apply([check({ limit: 0 })])[0]).toEqual({
      success: false,
      refused: false,
      limit: 0,
      remaining: 0,
      reset: start + SECOND,
    });
    expect(w.apply([check({ limit: 0, cost: 0 })])[0]!.success).toBe(false);
  });

  it("keeps one counter per duration, whatever the limit", () => {
    const w = new SlidingWindows(new TestClock(start));
    for (let i = 0; i < 5; i++) w.apply([check({ limit: 5 })]);
    // Same key and duration, another limit: the same 5 are counted.
    expect(w.apply([check({ limit: 6, cost: 0 })])[0]!.remaining).toBe(1);
    // Another duration is another counter.
    expect(w.apply([check({ limit: 5, duration: 60 * SECOND, cost: 0 })])[0]!.remaining).toBe(5);
  });

  it("counts a group all or nothing, each check reporting its own outcome", () => {
    const w = new SlidingWindows(new TestClock(start));
    const a = check({ key: "a", limit: 5 });
    const b = check({ key: "b", limit: 1 });
    expect(w.apply([a, b]).map((o) => o.success)).toEqual([true, true]);
    expect(w.apply([a, b]).map((o) => o.success)).toEqual([true, false]);
    // The failed group counted nothing on a: 4 remain after this single check.
    expect(w.apply([a])[0]!.remaining).toBe(3);
  });

  it("sees the earlier cost when a group names one counter twice", () => {
    const w = new SlidingWindows(new TestClock(start));
    const outcomes = w.apply([check({ limit: 1 }), check({ limit: 1 })]);
    expect(outcomes.map((o) => o.success)).toEqual([true, false]);
    expect(w.apply([check({ limit: 1, cost: 0 })])[0]!.remaining).toBe(1);
  });

  it("gives back a cost counted in the current or the previous window", () => {
    const clock = new TestClock(start);
    const w = new SlidingWindows(clock);
    const o = w.apply([check({ cost: 4 })])[0]!;
    w.undo(check({ cost: 4 }), o.reset);
    expect(w.apply([check({ cost: 0 })])[0]!.remaining).toBe(10);
    const p = w.apply([check({ cost: 4 })])[0]!;
    clock.set(start + SECOND); // elapsed 0: the previous window still weighs fully
    w.apply([check({ cost: 1 })]);
    w.undo(check({ cost: 4 }), p.reset);
    expect(w.apply([check({ cost: 0 })])[0]!.remaining).toBe(9);
  });

  it("sweeps counters whose windows have passed as checks arrive", () => {
    const clock = new TestClock(start);
    const w = new SlidingWindows(clock, { maxCounters: 1000, maxCountersPerWorkspace: 1000 });
    for (let i = 0; i < 500; i++) w.apply([check({ key: `ws_${i % 7}\u001fns\u001fk${i}` })]);
    expect(w.size).toBe(500);
    clock.set(start + 10 * SECOND);
    // A sweep every 64 checks looks at 32 entries or workspaces: 1280 checks get through them all.
    for (let i = 0; i < 1280; i++) w.apply([check({ key: `ws_0\u001fns\u001ffresh${i % 10}` })]);
    expect(w.size).toBe(10);
  });
});

const key = (ws: string, identifier: string) => `${ws}\u001fns\u001f${identifier}`;

describe("sliding windows: bounds per workspace", () => {
  it("denies a new counter of a workspace at its bound, keeps its other counters exact, and leaves other workspaces alone", () => {
    const clock = new TestClock(start);
    const { log, warnings } = recordingLog();
    const w = new SlidingWindows(clock, { maxCounters: 100, maxCountersPerWorkspace: 3, log });
    for (let i = 0; i < 3; i++) expect(w.apply([check({ key: key("a", `u${i}`) })])[0]!.success).toBe(true);
    expect(w.apply([check({ key: key("a", "u3") })])[0]).toEqual({
      success: false,
      refused: true,
      limit: 10,
      remaining: 0,
      reset: start + SECOND,
    });
    expect(warnings.map((l) => l.obj)).toEqual([
      {
        workspaceId: "a",
        reason: "workspace",
        counters: 3,
        bound: 3,
        bytes: 3 * counterBytes(`${key("a", "u0")}\u001f${SECOND}`),
        table: 3,
        tableBound: 100,
        tableBytes: 3 * counterBytes(`${key("a", "u0")}\u001f${SECOND}`),
        tableBytesBound: 335_544_320,
        refused: 1,
      },
    ]);
    // Cost 0 makes no counter, so it is answered.
    expect(w.apply([check({ key: key("a", "u3"), cost: 0 })])[0]).toMatchObject({
      success: true,
      remaining: 10,
    });
    expect(w.apply([check({ key: key("a", "u0") })])[0]!.remaining).toBe(8);
    expect(w.apply([check({ key: key("b", "u3") })])[0]!.success).toBe(true);
    expect(w.size).toBe(4);
  });

  it("counts a group nothing when one of its checks finds no room, each check reporting its own outcome", () => {
    const w = new SlidingWindows(new TestClock(start), { maxCounters: 100, maxCountersPerWorkspace: 2 });
    w.apply([check({ key: key("a", "u0") })]);
    // Two new counters for a workspace with room for one more.
    const group = [
      check({ key: key("a", "u0") }),
      check({ key: key("a", "u1") }),
      check({ key: key("a", "u2") }),
    ];
    expect(w.apply(group).map((o) => o.success)).toEqual([true, true, false]);
    expect(w.apply([check({ key: key("a", "u0"), cost: 0 })])[0]!.remaining).toBe(9);
    expect(w.size).toBe(1);
    // A group naming one new counter twice needs room for one.
    const twice = [check({ key: key("a", "u1") }), check({ key: key("a", "u1") })];
    expect(w.apply(twice).map((o) => o.remaining)).toEqual([9, 8]);
    expect(w.size).toBe(2);
  });

  it("never drops a counter whose current or previous window is in force; drops it once both ended and reuses the room", () => {
    const clock = new TestClock(start);
    const w = new SlidingWindows(clock, { maxCounters: 100, maxCountersPerWorkspace: 2 });
    w.apply([check({ key: key("a", "day"), duration: 86_400 * SECOND, cost: 5 })]);
    w.apply([check({ key: key("a", "second") })]);
    clock.set(start + SECOND + 999); // the second's window is the previous one, nearly out
    expect(w.apply([check({ key: key("a", "new") })])[0]!.success).toBe(false);
    clock.set(start + 2 * SECOND);
    expect(w.apply([check({ key: key("a", "new") })])[0]!.success).toBe(true);
    expect(w.apply([check({ key: key("a", "newer") })])[0]!.success).toBe(false);
    expect(w.apply([check({ key: key("a", "day"), duration: 86_400 * SECOND, cost: 0 })])[0]!.remaining).toBe(
      5,
    );
  });

  it("does not drop, to make room, an ended counter that the same group counts on", () => {
    const clock = new TestClock(start);
    const w = new SlidingWindows(clock, { maxCounters: 100, maxCountersPerWorkspace: 2 });
    w.apply([check({ key: key("a", "second") })]);
    w.apply([check({ key: key("a", "day"), duration: 86_400 * SECOND })]);
    clock.set(start + 3 * SECOND); // "second" has ended but is still held
    // "new" would take the room of "second", which this group counts on again: denied, nothing counted.
    const group = [check({ key: key("a", "second") }), check({ key: key("a", "new") })];
    expect(w.apply(group).map((o) => o.success)).toEqual([true, false]);
    expect(w.size).toBe(2);
    expect(w.apply([check({ key: key("a", "second") })])[0]!.remaining).toBe(9);
    expect(w.apply([check({ key: key("a", "new") })])[0]!.success).toBe(false);
    expect(w.size).toBe(2);
  });

  it("keeps a counter that rolled into a new window past the end of the window it was created in", () => {
    const clock = new TestClock(start);
    const w = new SlidingWindows(clock, { maxCounters: 100, maxCountersPerWorkspace: 1 });
    w.apply([check({ key: key("a", "u") })]);
    for (let s = 1; s <= 5; s++) {
      clock.set(start + s * SECOND);
      w.apply([check({ key: key("a", "u") })]);
    }
    clock.set(start + 6 * SECOND + 500);
    // Created in window 0, last counted in window 5: still weighed, so still held.
    expect(w.apply([check({ key: key("a", "other") })])[0]!.success).toBe(false);
    expect(w.apply([check({ key: key("a", "u"), cost: 0 })])[0]!.remaining).toBe(10 - Math.floor(1 * 0.5));
  });

  it("never holds more than maxCounters, and one workspace never more than the room the others leave", () => {
    const w = new SlidingWindows(new TestClock(start), { maxCounters: 100, maxCountersPerWorkspace: 100 });
    const fill = (ws: string, n: number) => {
      let passed = 0;
      for (let i = 0; i < n; i++) if (w.apply([check({ key: key(ws, `u${i}`) })])[0]!.success) passed++;
      return passed;
    };
    expect(fill("b", 1000)).toBe(50);
    expect(fill("a", 1000)).toBe(25);
    for (let ws = 0; ws < 50; ws++) fill(`w${ws}`, 10);
    expect(w.size).toBeLessThanOrEqual(100);
    expect(w.apply([check({ key: key("b", "u0"), cost: 0 })])[0]!.remaining).toBe(9);
  });
});

describe("sliding windows: bounds in bytes", () => {
  /** A longest identifier (512 characters) ending in `i`, of one character `char`. */
  const longest = (i: number, char = "x") => `${i}`.padStart(512, char);
  const id = (ws: string, identifier: string) => `${key(ws, identifier)}\u001f${SECOND}`;

  it("counts a counter's bytes by its id's length, two a character beyond Latin-1", () => {
    expect(counterBytes("ws\u001fns\u001fu\u001f1000")).toBe(COUNTER_OVERHEAD_BYTES + 12);
    expect(counterBytes("ws\u001fns\u001fé\u001f1000")).toBe(COUNTER_OVERHEAD_BYTES + 12);
    expect(counterBytes("ws\u001fns\u001f€\u001f1000")).toBe(COUNTER_OVERHEAD_BYTES + 24);
    const w = new SlidingWindows(new TestClock(start));
    w.apply([check({ key: key("a", longest(0, "€")) }), check({ key: key("a", "u") })]);
    expect(w.heldBy("a")).toEqual({
      counters: 2,
      bytes: COUNTER_OVERHEAD_BYTES * 2 + 2 * id("a", longest(0, "€")).length + id("a", "u").length,
    });
    expect(w.bytes).toBe(w.heldBy("a").bytes);
  });

  it("lets no workspace flooding with the longest identifiers take more than half the bytes left, and serves the others exactly", () => {
    const maxBytes = 100_000;
    const w = new SlidingWindows(new TestClock(start), {
      maxCounters: 1_000_000,
      maxCountersPerWorkspace: 1_000_000,
      maxBytes,
    });
    // A holds a counter of 2 of 10 used before the flood.
    w.apply([check({ key: key("a", "user_1"), cost: 2 })]);
    const fill = (ws: string, char: string) => {
      let passed = 0;
      for (let i = 0; i < 1000; i++)
        if (w.apply([check({ key: key(ws, longest(i, char)) })])[0]!.success) passed++;
      return passed;
    };
    const each = counterBytes(id("b", longest(0, "€")));
    const left = maxBytes - w.bytes;
    // B's counters, two bytes a character: as many as keep it within the bytes the table has left free.
    const b = fill("b", "€");
    expect(b).toBe(Math.floor(left / 2 / each));
    expect(w.heldBy("b").bytes).toBe(b * each);
    expect(w.heldBy("b").bytes).toBeLessThanOrEqual((maxBytes - w.heldBy("a").bytes) / 2);
    // C, flooding next, gets no more than half of what B and A leave.
    const c = fill("c", "x");
    expect(w.heldBy("c").bytes).toBeLessThanOrEqual(
      (maxBytes - w.heldBy("a").bytes - w.heldBy("b").bytes) / 2,
    );
    expect(c).toBe(
      Math.floor(
        (maxBytes - w.heldBy("a").bytes - w.heldBy("b").bytes) / 2 / counterBytes(id("c", longest(0))),
      ),
    );
    expect(w.bytes).toBeLessThanOrEqual(maxBytes);
    // A's counter counts on exactly, and A still has room for new identifiers.
    expect(w.apply([check({ key: key("a", "user_1") })])[0]).toMatchObject({ success: true, remaining: 7 });
    expect(w.apply([check({ key: key("a", "user_2") })])[0]).toMatchObject({ success: true, remaining: 9 });
  });

  it("gives an ended counter's bytes back, so the room it held is used again", () => {
    const clock = new TestClock(start);
    const each = counterBytes(id("a", longest(0)));
    const w = new SlidingWindows(clock, { maxBytes: 4 * each, maxCountersPerWorkspace: 100 });
    expect(w.apply([check({ key: key("a", longest(0)) })])[0]!.success).toBe(true);
    expect(w.apply([check({ key: key("a", longest(1)) })])[0]!.success).toBe(true);
    // Two of four: a third would leave it more than the bytes left free.
    expect(w.apply([check({ key: key("a", longest(2)) })])[0]).toMatchObject({
      success: false,
      refused: true,
    });
    expect(w.bytes).toBe(2 * each);
    // Both have ended: their bytes go to two new counters, and to no third.
    clock.set(start + 2 * SECOND);
    expect(w.apply([check({ key: key("a", longest(2)) })])[0]!.success).toBe(true);
    expect(w.apply([check({ key: key("a", longest(3)) })])[0]!.success).toBe(true);
    expect(w.apply([check({ key: key("a", longest(4)) })])[0]).toMatchObject({
      success: false,
      refused: true,
    });
    expect(w.heldBy("a")).toEqual({ counters: 2, bytes: 2 * each });
    expect(w.bytes).toBe(2 * each);
  });

  it("counts identifiers that share all but their last character apart", () => {
    const w = new SlidingWindows(new TestClock(start));
    const one = longest(1);
    const other = `${one.slice(0, 511)}2`;
    for (let i = 0; i < 3; i++) w.apply([check({ key: key("a", one) })]);
    expect(w.apply([check({ key: key("a", other) })])[0]!.remaining).toBe(9);
    expect(w.apply([check({ key: key("a", one), cost: 0 })])[0]!.remaining).toBe(7);
  });
});
