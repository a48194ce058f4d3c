import { create } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { type Caller, CallerSchema, type ErrorReason } from "@latchkey/proto/common/v1/common_pb";
import { RatelimitService } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { type Bus, errorDetailOf, TestClock } from "@latchkey/runtime";
import { expect } from "vitest";
import { createMemoryRatelimitDeps, type RatelimitDeps } from "./deps.ts";
import { ratelimitRoutes } from "./routes.ts";
import type { RatelimitStore } from "./store/ratelimit-store.ts";

/** A ratelimit service in memory behind the router transport, with a clock the test moves. */
export function harness(options: { store?: RatelimitStore; bus?: Bus; clock?: TestClock } = {}) {
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
