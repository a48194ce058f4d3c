import { fromBinary } from "@bufbuild/protobuf";
import { RatelimitCheckedSchema } from "@latchkey/proto/ratelimit/v1/events_pb";
import { ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import {
  caller,
  eventsSettled,
  harness,
  LIMITER,
  recordingSink,
  rejection,
} from "../testing/in-memory-ratelimit.ts";
import { SUBJECT_CHECKED } from "./events.ts";

const check = (identifier: string, limit: bigint, over: Record<string, unknown> = {}) => ({
  namespace: "api.requests",
  identifier,
  limit,
  duration: 60_000n,
  ...over,
});
const RESET = BigInt(Date.UTC(2026, 0, 1, 0, 1, 0));
// Denials also publish ratelimit.exceeded on events.domain (exceeded.test.ts): only the checks here.
const decoded = (sink: ReturnType<typeof recordingSink>) =>
  sink.events
    .filter((e) => e.subject === SUBJECT_CHECKED)
    .map((e) => ({
      subject: e.subject,
      id: e.id,
      event: fromBinary(RatelimitCheckedSchema, e.data),
    }));

describe("standalone checks recorded for analytics (events.ratelimit.checked)", () => {
  it("records a limit as one RatelimitChecked with id <requestId>:0 and the answered outcome", async () => {
    const sink = recordingSink();
    const { client, deps, clock } = harness({ events: sink });
    await client.limit({
      caller: caller("ws_1", ...LIMITER),
      check: check("u1", 5n, { cost: 2n }),
      requestId: "req_1",
    });
    await eventsSettled();
    const ns = await deps.store.namespaceByName("ws_1", "api.requests");
    const [one, ...rest] = decoded(sink);
    expect(rest).toEqual([]);
    expect(one!.subject).toBe(SUBJECT_CHECKED);
    expect(one!.id).toBe("req_1:0");
    expect(one!.event).toMatchObject({
      requestId: "req_1",
      index: 0,
      time: BigInt(clock.now()),
      workspaceId: "ws_1",
      namespaceId: ns!.id,
      identifier: "u1",
      passed: true,
      limit: 5n,
      remaining: 3n,
      reset: RESET,
      cost: 2n,
      overrideId: "",
    });
  });

  it("records a denied limit as passed false, with the override that applied", async () => {
    const sink = recordingSink();
    const { client } = harness({ events: sink });
    const admin = caller("ws_1", ...LIMITER, "ratelimit.*.set_override");
    await client.limit({ caller: admin, check: check("vip", 5n, { cost: 0n }) });
    const { overrideId } = await client.setOverride({
      caller: admin,
      namespace: "api.requests",
      identifier: "vip",
      limit: 1n,
      duration: 60_000n,
    });
    await client.limit({ caller: admin, check: check("vip", 5n), requestId: "req_a" });
    await client.limit({ caller: admin, check: check("vip", 5n), requestId: "req_b" });
    await eventsSettled();
    const last = decoded(sink).at(-1)!;
    expect(last.id).toBe("req_b:0");
    expect(last.event).toMatchObject({ passed: false, limit: 1n, remaining: 0n, overrideId });
  });

  it("records each check of a multiLimit under one requestId with its index, all failed when one fails", async () => {
    const sink = recordingSink();
    const { client } = harness({ events: sink });
    const c = caller("ws_1", ...LIMITER);
    await client.limit({ caller: c, check: check("b", 1n), requestId: "req_0" });
    await client.multiLimit({ caller: c, checks: [check("a", 5n), check("b", 1n)], requestId: "req_2" });
    await eventsSettled();
    const multi = decoded(sink).slice(1);
    expect(
      multi.map((e) => [e.id, e.event.requestId, e.event.index, e.event.identifier, e.event.passed]),
    ).toEqual([
      ["req_2:0", "req_2", 0, "a", false],
      ["req_2:1", "req_2", 1, "b", false],
    ]);
  });

  it("records every item of a LimitBatch under its own requestId, and nothing for an item that failed", async () => {
    const sink = recordingSink();
    const { client } = harness({ events: sink });
    await client.limitBatch({
      callers: [caller("ws_1", ...LIMITER), caller("ws_1")],
      items: [
        { callerIndex: 0, request: { check: check("a", 5n), requestId: "req_x" } },
        { callerIndex: 1, request: { check: check("a", 5n), requestId: "req_forbidden" } },
        { callerIndex: 0, request: { check: check("a", 5n), requestId: "req_y" } },
      ],
    });
    await eventsSettled();
    expect(decoded(sink).map((e) => [e.id, e.event.remaining])).toEqual([
      ["req_x:0", 4n],
      ["req_y:0", 3n],
    ]);
  });

  it("records nothing for a refused check", async () => {
    const sink = recordingSink();
    const { client } = harness({ events: sink });
    await rejection(
      client.limit({
        caller: caller("ws_1", "ratelimit.*.limit"),
        check: check("a", 5n),
        requestId: "req_1",
      }),
      ErrorReason.INSUFFICIENT_PERMISSIONS,
    );
    await eventsSettled();
    expect(sink.events).toEqual([]);
  });

  it("gives checks without a requestId distinct ids", async () => {
    const sink = recordingSink();
    const { client } = harness({ events: sink });
    const c = caller("ws_1", ...LIMITER);
    await client.limit({ caller: c, check: check("a", 5n) });
    await client.limit({ caller: c, check: check("a", 5n) });
    await eventsSettled();
    const ids = sink.events.map((e) => e.id);
    expect(ids).toHaveLength(2);
    expect(ids[0]).toMatch(/^rlc_/);
    expect(new Set(ids).size).toBe(2);
  });

  it("records nothing for checks whose request carried X-Unkey-Metrics: disabled, counting them still", async () => {
    const sink = recordingSink();
    const { client } = harness({ events: sink });
    const c = caller("ws_1", ...LIMITER);
    await client.limit({ caller: c, check: check("a", 5n), requestId: "req_1", metricsDisabled: true });
    await client.multiLimit({
      caller: c,
      checks: [check("a", 5n)],
      requestId: "req_2",
      metricsDisabled: true,
    });
    await client.limitBatch({
      callers: [c],
      items: [
        { callerIndex: 0, request: { check: check("a", 5n), requestId: "req_3", metricsDisabled: true } },
        { callerIndex: 0, request: { check: check("a", 5n), requestId: "req_4" } },
      ],
    });
    await eventsSettled();
    expect(decoded(sink).map((e) => [e.id, e.event.remaining])).toEqual([["req_4:0", 1n]]);
  });
});

describe("named-limit checks of verifications recorded for analytics", () => {
  const named = (owner: string, name: string, max: bigint, cost?: bigint) => ({
    owner,
    name,
    limit: max,
    duration: 60_000n,
    ...(cost === undefined ? {} : { cost }),
  });

  it("records each limit of each verification once, under named:<name> with its owner as identifier, every id distinct", async () => {
    const sink = recordingSink();
    const { client } = harness({ events: sink });
    await client.checkNamedLimits({
      groups: [
        {
          workspaceId: "ws_1",
          limits: [named("key_1", "requests", 10n), named("id_1", "tokens", 100n, 30n)],
        },
        { workspaceId: "ws_2", limits: [named("key_2", "requests", 1n)] },
      ],
    });
    await eventsSettled();
    const events = decoded(sink);
    expect(
      events.map((e) => [
        e.event.workspaceId,
        e.event.namespaceId,
        e.event.identifier,
        e.event.passed,
        e.event.cost,
        e.event.remaining,
        e.event.index,
      ]),
    ).toEqual([
      ["ws_1", "named:requests", "key_1", true, 1n, 9n, 0],
      ["ws_1", "named:tokens", "id_1", true, 30n, 70n, 1],
      ["ws_2", "named:requests", "key_2", true, 1n, 0n, 2],
    ]);
    // One request id for the call's checks, each its own index and event id.
    expect(new Set(events.map((e) => e.event.requestId)).size).toBe(1);
    expect(events.map((e) => e.event.count)).toEqual([1, 1, 1]);
    expect(new Set(events.map((e) => e.id)).size).toBe(3);
    const next = await (async () => {
      await client.checkNamedLimits({
        groups: [{ workspaceId: "ws_1", limits: [named("key_1", "requests", 10n)] }],
      });
      await eventsSettled();
      return decoded(sink).at(-1)!;
    })();
    expect(next.event.requestId).not.toBe(events[0]!.event.requestId);
  });

  it("sends the identical checks of one call as one event with their count and the last one's answer", async () => {
    const sink = recordingSink();
    const { client } = harness({ events: sink });
    const same = { workspaceId: "ws_1", limits: [named("key_1", "requests", 3n)] };
    await client.checkNamedLimits({ groups: [same, same, same, same, same] });
    await eventsSettled();
    expect(
      decoded(sink).map((e) => [e.event.passed, e.event.count, e.event.remaining, e.event.index]),
    ).toEqual([
      [true, 3, 0n, 0],
      [false, 2, 0n, 1],
    ]);
  });

  it("records every limit of a verification whose limits did not all pass as refused, since none was counted", async () => {
    const sink = recordingSink();
    const { client } = harness({ events: sink });
    await client.checkNamedLimits({
      groups: [{ workspaceId: "ws_1", limits: [named("id_1", "tokens", 1n)] }],
    });
    await client.checkNamedLimits({
      groups: [
        { workspaceId: "ws_1", limits: [named("key_1", "requests", 10n), named("id_1", "tokens", 1n)] },
      ],
    });
    await eventsSettled();
    expect(decoded(sink).map((e) => [e.event.namespaceId, e.event.passed])).toEqual([
      ["named:tokens", true],
      ["named:requests", false],
      ["named:tokens", false],
    ]);
  });
});
