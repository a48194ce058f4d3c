import { fromBinary } from "@bufbuild/protobuf";
import { DomainEventSchema } from "@latchkey/proto/common/v1/common_pb";
import { DOMAIN_EVENT_SUBJECT, domainEventId, type TestClock } from "@latchkey/runtime";
import { expect, it } from "vitest";
import { counterKey } from "../src/checks.ts";
import type { RatelimitDeps } from "../src/deps.ts";
import { namedCounterKey } from "../src/named-limits.ts";
import { caller, type harness, LIMITER, recordingSink } from "./in-memory-ratelimit.ts";

/**
 * ratelimit.exceeded, the same whatever counts the checks: exceeded.test.ts runs it with counters in
 * memory, exceeded-redis.int.test.ts in Redis. `start` builds a service on the clock and sink given.
 */
export function exceededSuite(
  start: (options: {
    events: ReturnType<typeof recordingSink>;
    clock?: TestClock;
    maxCountersPerWorkspace?: number;
  }) => ReturnType<typeof harness>,
) {
  const MINUTE = 60_000;
  const check = (identifier: string, limit = 1n, namespace = "api.requests") => ({
    namespace,
    identifier,
    limit,
    duration: BigInt(MINUTE),
  });

  function service(options: { maxCountersPerWorkspace?: number } = {}) {
    const sink = recordingSink();
    const h = start({ events: sink, ...options });
    const published = () =>
      sink.events
        .filter((e) => e.subject === DOMAIN_EVENT_SUBJECT)
        .map((e) => {
          const event = fromBinary(DomainEventSchema, e.data);
          expect(event.id).toBe(e.id);
          return {
            id: event.id,
            type: event.type,
            workspaceId: event.workspaceId,
            occurredAt: Number(event.occurredAt),
            data: JSON.parse(event.dataJson) as Record<string, unknown>,
          };
        });
    return { ...h, published };
  }

  /** The window of the harness clock's minute, and the event id of a counter's denial in it. */
  const windowOf = (now: number) => Math.floor(now / MINUTE) * MINUTE;
  const nsId = async (deps: RatelimitDeps, ws: string, name = "api.requests") =>
    (await deps.store.namespaceByName(ws, name))!.id;

  it("announces 100 denials of one identifier in one window as one event, with its exact data and id", async () => {
    const { client, clock, deps, published } = service();
    const c = caller("ws_1", ...LIMITER);
    expect((await client.limit({ caller: c, check: check("user_1") })).result?.success).toBe(true);
    for (let i = 0; i < 100; i++) {
      expect((await client.limit({ caller: c, check: check("user_1") })).result?.success).toBe(false);
    }
    const windowStart = windowOf(clock.now());
    const key = counterKey("ws_1", await nsId(deps, "ws_1"), "user_1");
    expect(published()).toEqual([
      {
        id: domainEventId("ratelimit.exceeded", key, MINUTE, windowStart),
        type: "ratelimit.exceeded",
        workspaceId: "ws_1",
        occurredAt: clock.now(),
        data: { namespace: "api.requests", identifier: "user_1", limit: 1, duration: MINUTE, windowStart },
      },
    ]);
  });

  it("announces the denials of the next window as a second event", async () => {
    const { client, clock, published } = service();
    const c = caller("ws_1", ...LIMITER);
    for (let i = 0; i < 5; i++) await client.limit({ caller: c, check: check("user_1") });
    const first = windowOf(clock.now());
    // Two windows on: the sliding window no longer weighs the first, so the limit passes once again.
    clock.advance(2 * MINUTE);
    for (let i = 0; i < 5; i++) await client.limit({ caller: c, check: check("user_1") });
    const events = published();
    expect(events.map((e) => e.data["windowStart"])).toEqual([first, first + 2 * MINUTE]);
    expect(new Set(events.map((e) => e.id)).size).toBe(2);
  });

  it("announces two identifiers as two events, and a coalesced limitBatch like single calls", async () => {
    const { client, published } = service();
    const c = caller("ws_1", ...LIMITER);
    const items = ["a", "b", "a", "b", "a", "b"].map((identifier) => ({
      callerIndex: 0,
      request: { check: check(identifier) },
    }));
    const res = await client.limitBatch({ callers: [c], items });
    expect(
      res.results.map((r) => (r.result.case === "response" ? r.result.value.result?.success : null)),
    ).toEqual([true, true, false, false, false, false]);
    expect(published().map((e) => e.data["identifier"])).toEqual(["a", "b"]);
  });

  it("never mixes workspaces: the same namespace and identifier in two workspaces are two events, each in its own", async () => {
    const { client, deps, clock, published } = service();
    for (const ws of ["ws_1", "ws_2"]) {
      for (let i = 0; i < 3; i++)
        await client.limit({ caller: caller(ws, ...LIMITER), check: check("user_1") });
    }
    const windowStart = windowOf(clock.now());
    const events = published();
    expect(events.map((e) => [e.workspaceId, e.id])).toEqual([
      [
        "ws_1",
        domainEventId(
          "ratelimit.exceeded",
          counterKey("ws_1", await nsId(deps, "ws_1"), "user_1"),
          MINUTE,
          windowStart,
        ),
      ],
      [
        "ws_2",
        domainEventId(
          "ratelimit.exceeded",
          counterKey("ws_2", await nsId(deps, "ws_2"), "user_1"),
          MINUTE,
          windowStart,
        ),
      ],
    ]);
    expect(events[0]!.id).not.toBe(events[1]!.id);
  });

  it("announces the checks of a multiLimit that were denied, not those that would have passed", async () => {
    const { client, published } = service();
    const c = caller("ws_1", ...LIMITER);
    await client.limit({ caller: c, check: check("b") });
    const res = await client.multiLimit({ caller: c, checks: [check("a", 5n), check("b")] });
    expect(res.passed).toBe(false);
    expect(published().map((e) => e.data["identifier"])).toEqual(["b"]);
  });

  it("announces a verification's named limit once per window: namespace the limit's name, identifier its owner", async () => {
    const { client, clock, published } = service();
    const group = {
      workspaceId: "ws_1",
      limits: [{ owner: "key_1", name: "requests", limit: 2n, duration: 60_000n }],
    };
    const res = await client.checkNamedLimits({ groups: Array(10).fill(group) });
    expect(res.groups.map((g) => g.passed)).toEqual([true, true, ...Array(8).fill(false)]);
    const windowStart = windowOf(clock.now());
    expect(published()).toEqual([
      {
        id: domainEventId(
          "ratelimit.exceeded",
          namedCounterKey("ws_1", "key_1", "requests"),
          MINUTE,
          windowStart,
        ),
        type: "ratelimit.exceeded",
        workspaceId: "ws_1",
        occurredAt: clock.now(),
        data: { namespace: "requests", identifier: "key_1", limit: 2, duration: MINUTE, windowStart },
      },
    ]);
  });

  it("announces nothing for a check refused because the workspace's counters are full, and still announces a limit denial", async () => {
    const { client, deps, clock, published } = service({ maxCountersPerWorkspace: 2 });
    const c = caller("ws_1", ...LIMITER);
    const success = async (identifier: string) =>
      (await client.limit({ caller: c, check: check(identifier, 5n) })).result?.success;
    // Two identifiers fill the workspace's room; the third and fourth are refused, far below their limit.
    expect([await success("a"), await success("b"), await success("c"), await success("d")]).toEqual([
      true,
      true,
      false,
      false,
    ]);
    expect(published()).toEqual([]);
    const group = {
      workspaceId: "ws_1",
      limits: [{ owner: "key_1", name: "requests", limit: 5n, duration: 60_000n }],
    };
    expect((await client.checkNamedLimits({ groups: [group] })).groups[0]!.passed).toBe(false);
    expect(published()).toEqual([]);
    // A limit denial of a counter that has room is still announced, once.
    for (let i = 0; i < 7; i++) await success("a");
    const key = counterKey("ws_1", await nsId(deps, "ws_1"), "a");
    expect(published().map((e) => [e.id, e.data["identifier"]])).toEqual([
      [domainEventId("ratelimit.exceeded", key, MINUTE, windowOf(clock.now())), "a"],
    ]);
  });

  it("announces nothing while checks pass", async () => {
    const { client, published } = service();
    const c = caller("ws_1", ...LIMITER);
    for (let i = 0; i < 20; i++) await client.limit({ caller: c, check: check(`user_${i % 3}`, 100n) });
    expect(published()).toEqual([]);
  });
}
