import { fromBinary } from "@bufbuild/protobuf";
import { DomainEventSchema } from "@latchkey/proto/common/v1/common_pb";
import { domainEventId, TestClock } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { exceededSuite } from "../testing/exceeded.suite.ts";
import { harness, recordingSink } from "../testing/in-memory-ratelimit.ts";
import { ExceededEvents } from "./exceeded.ts";
import { counterBytes } from "./limiter/sliding-windows.ts";

describe("ratelimit.exceeded with counters in memory", () => {
  exceededSuite(({ clock, ...options }) => harness({ ...options, ...(clock ? { clock } : {}) }));
});

describe("ExceededEvents' memory", () => {
  const denial = (identifier: string) => ({
    counter: { key: `ws_1\u001fns_1\u001f${identifier}`, limit: 1, duration: 60_000, cost: 1 },
    namespace: { workspaceId: "ws_1", name: "api" },
    check: { identifier },
  });
  const outcome = { success: false, refused: false, limit: 1, remaining: 0, reset: 120_000 };

  it("holds at most its bound of counters: one forgotten is announced again, under the same id", () => {
    const sink = recordingSink();
    const exceeded = new ExceededEvents(sink, new TestClock(), 2);
    for (const id of ["a", "b", "a", "b", "c", "b", "c", "a"]) exceeded.limitDenied(denial(id), outcome);
    // a and b fill it; c pushes out a (denied less recently than b); a comes back.
    const ids = sink.events.map((e) => fromBinary(DomainEventSchema, e.data).dataJson);
    expect(ids.map((j) => JSON.parse(j).identifier)).toEqual(["a", "b", "c", "a"]);
    const key = denial("a").counter.key;
    expect(sink.events[0]!.id).toBe(domainEventId("ratelimit.exceeded", key, 60_000, 60_000));
    expect(sink.events[3]!.id).toBe(sink.events[0]!.id);
  });

  it("forgets the counter denied least recently, not the one announced first", () => {
    const sink = recordingSink();
    const exceeded = new ExceededEvents(sink, new TestClock(), 2);
    // a is denied again after b; c pushes out b, so a's next denial in its window is no news.
    for (const id of ["a", "b", "a", "c", "a"]) exceeded.limitDenied(denial(id), outcome);
    const identifiers = sink.events.map(
      (e) => JSON.parse(fromBinary(DomainEventSchema, e.data).dataJson).identifier,
    );
    expect(identifiers).toEqual(["a", "b", "c"]);
  });

  it("holds at most its bound of bytes: a flood of denials of the longest identifiers forgets the oldest", () => {
    const sink = recordingSink();
    const longest = (i: number) => `${i}`.padStart(512, "€");
    const each = counterBytes(`${denial(longest(0)).counter.key}\u001f60000`);
    const exceeded = new ExceededEvents(sink, new TestClock(), 1_000, 10 * each);
    exceeded.limitDenied(denial("short"), outcome);
    for (let i = 0; i < 50; i++) exceeded.limitDenied(denial(longest(i)), outcome);
    expect(exceeded.remembered).toEqual({ counters: 10, bytes: 10 * each });
    // The last ten are remembered: denied again in their window, they are not announced again.
    const published = sink.events.length;
    for (let i = 40; i < 50; i++) exceeded.limitDenied(denial(longest(i)), outcome);
    expect(sink.events.length).toBe(published);
    exceeded.limitDenied(denial("short"), outcome);
    expect(sink.events.length).toBe(published + 1);
  });
});
