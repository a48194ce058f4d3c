import { create } from "@bufbuild/protobuf";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { type Caller, CallerSchema, type ErrorReason } from "@latchkey/proto/common/v1/common_pb";
import { RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import {
  type Bus,
  createLogger,
  type EventSink,
  errorDetailOf,
  type Logger,
  TestClock,
} from "@latchkey/runtime";
import type { Redis } from "ioredis";
import { expect } from "vitest";
import { createMemoryRatelimitDeps, type RatelimitDeps } from "../src/deps.ts";
import { ratelimitRoutes } from "../src/routes.ts";
import type { RatelimitStore } from "../src/store/ratelimit-store.ts";

/** A ratelimit service in memory behind the router transport, with a clock the test moves. */
export function harness(
  options: {
    /** Counters in Redis rather than in memory (RATELIMIT_STORE=redis). */
    redis?: { client: Redis; prefix: string };
    store?: RatelimitStore;
    bus?: Bus;
    clock?: TestClock;
    events?: EventSink;
    log?: Logger;
    maxCounters?: number;
    maxCountersPerWorkspace?: number;
    maxCounterBytes?: number;
  } = {},
) {
  // Mid-window by default, so the previous window's weight is exactly one half for 1 s windows.
  const clock = options.clock ?? new TestClock(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
  const deps: RatelimitDeps = createMemoryRatelimitDeps({ ...options, clock });
  const client = createClient(RatelimitService, createRouterTransport(ratelimitRoutes(deps)));
  return { deps, client, clock };
}

/** A caller of workspace `ws` holding `permissions`, e.g. caller("ws_1", "ratelimit.*.limit"). */
export const caller = (workspaceId: string, ...permissions: string[]): Caller =>
  create(CallerSchema, { workspaceId, rootKeyId: `rk_${workspaceId}`, permissions });

/** The permissions to create a namespace on first use and limit in it. */
export const LIMITER = ["ratelimit.*.limit", "ratelimit.*.create_namespace"];

/** Awaits a call that must fail with `reason`, and answers the error for further checks. */
export async function rejection(call: Promise<unknown>, reason: ErrorReason): Promise<Error> {
  try {
    await call;
  } catch (err) {
    expect(errorDetailOf(err)?.reason, (err as Error).message).toBe(reason);
    return err as Error;
  }
  throw new Error(`expected the call to fail with reason ${reason}, it succeeded`);
}

/** An event sink that keeps what it is given, decoded by the test. */
export function recordingSink(): EventSink & { events: { subject: string; id: string; data: Uint8Array }[] } {
  const events: { subject: string; id: string; data: Uint8Array }[] = [];
  return {
    events,
    // Encoded as the JetStream sink would: the tests decode what would travel.
    publish: (type, id, message) =>
      void events.push({ subject: type.subject, id, data: type.encode(message) }),
    flush: async () => {},
    stats: () => ({ buffered: 0, published: events.length, dropped: 0 }),
  };
}

/** Lets the events queued by the last answers reach the sink (they are handed over after the answer). */
export const eventsSettled = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A silent logger that keeps its warnings, for tests of what is logged. */
export function recordingLog(): { log: Logger; warnings: { obj: Record<string, unknown>; msg?: string }[] } {
  const warnings: { obj: Record<string, unknown>; msg?: string }[] = [];
  const log = createLogger("ratelimit", "silent");
  log.warn = ((obj: Record<string, unknown>, msg?: string) => {
    warnings.push({ obj, ...(msg === undefined ? {} : { msg }) });
  }) as Logger["warn"];
  return { log, warnings };
}

/**
 * New counters of one workspace, as a flooding tenant makes them, each a
 * daily limit of 1000: `verificationBatches` CheckNamedLimits calls of 22
 * verifications with 3 new named limits each (what keys.verifyKey's
 * `ratelimits` carries), `limitBatches` coalesced LimitBatch calls of 64 new
 * identifiers, and `singles` Limit and two-check MultiLimit calls. Answers how
 * many new counters were counted.
 */
export async function floodNewCounters(
  client: Client<typeof RatelimitService>,
  tenant: Caller,
  counts: { verificationBatches: number; limitBatches: number; singles: number },
): Promise<number> {
  const DAY = 86_400_000n;
  const check = (identifier: string) => ({ namespace: "api", identifier, limit: 1000n, duration: DAY });
  let n = 0;
  let counted = 0;
  for (let call = 0; call < counts.verificationBatches; call++) {
    const groups = Array.from({ length: 22 }, () => ({
      workspaceId: tenant.workspaceId,
      limits: Array.from({ length: 3 }, () => ({
        owner: `key_${n++}`,
        name: "requests",
        limit: 1000n,
        duration: DAY,
      })),
    }));
    counted += (await client.checkNamedLimits({ groups })).groups.filter((g) => g.passed).length * 3;
  }
  for (let call = 0; call < counts.limitBatches; call++) {
    const res = await client.limitBatch({
      callers: [tenant],
      items: Array.from({ length: 64 }, () => ({
        callerIndex: 0,
        request: { check: check(`flood_${n++}`) },
      })),
    });
    counted += res.results.filter(
      (r) => r.result.case === "response" && r.result.value.result?.success,
    ).length;
  }
  for (let i = 0; i < counts.singles; i++) {
    if ((await client.limit({ caller: tenant, check: check(`flood_${n++}`) })).result?.success) counted++;
    const multi = await client.multiLimit({
      caller: tenant,
      checks: [check(`flood_${n++}`), check(`flood_${n++}`)],
    });
    if (multi.passed) counted += 2;
  }
  return counted;
}
