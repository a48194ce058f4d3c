import type { LimitCheck, LimitRequest, LimitResult } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { type Static, Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, Int, Str } from "../../schema.ts";

/** Unkey's v2 shape; its v1 fields async, meta and resources do not exist in v2. */
export const limitCheckSchema = Closed({
  namespace: Str(1, 512),
  identifier: Str(1, 512),
  limit: Int({ minimum: 1 }),
  duration: Int({ minimum: 1000, maximum: 2_592_000_000 }),
  cost: Type.Optional(Int()),
});

/**
 * The check as a message. Written as a literal rather than with create():
 * this runs once per ratelimits.limit request, the hot path, and every field
 * is set here anyway.
 */
export function limitCheck(input: Static<typeof limitCheckSchema>): LimitCheck {
  return {
    $typeName: "ratelimit.v1.LimitCheck",
    namespace: input.namespace,
    identifier: input.identifier,
    limit: BigInt(input.limit),
    duration: BigInt(input.duration),
    cost: input.cost === undefined ? undefined : BigInt(input.cost),
  };
}

/**
 * Served as ratelimits.limit (Latchkey's) and ratelimit.limit (Unkey's), through
 * the batcher: concurrent limits travel in one LimitBatch call.
 */
export const limit = route({
  answer: Closed({
    limit: Int(),
    remaining: Int(),
    reset: Int(),
    success: Type.Boolean(),
    overrideId: Type.Optional(Type.String()),
  }),
  example: { namespace: "email", identifier: "user_1", limit: 10, duration: 60_000 },
  rootKey: {
    needs: ["ratelimit.<namespace>.limit"],
    also: "a namespace that does not exist yet: also `ratelimit.*.create_namespace`",
  },
  schema: limitCheckSchema,
  async handle(input, { caller, requestId, services }) {
    const request: LimitRequest = {
      $typeName: "ratelimit.v1.LimitRequest",
      caller: undefined,
      check: limitCheck(input),
      requestId,
    };
    const { result } = await services.limit(caller, request);
    if (!result) throw new Error("Limit answered without a result");
    // Written as JSON directly (the hot path): {limit, remaining, reset, success, overrideId?}.
    let json = `{"limit":${Number(result.limit)},"remaining":${Number(result.remaining)},"reset":${Number(result.reset)},"success":${result.success}`;
    if (result.overrideId) json += `,"overrideId":${JSON.stringify(result.overrideId)}`;
    return { json: `${json}}` };
  },
});

export const overrideIdOf = (r: LimitResult) => (r.overrideId === "" ? undefined : r.overrideId);
