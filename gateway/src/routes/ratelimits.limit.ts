import { create } from "@bufbuild/protobuf";
import {
  type LimitCheck,
  LimitCheckSchema,
  LimitRequestSchema,
  type LimitResult,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { type Static, Type } from "@sinclair/typebox";
import { defined, num } from "../json.ts";
import { route } from "../route.ts";
import { Closed, Int, Str } from "../schema.ts";

/** Reference notes a.11; the v1 fields async, meta and resources do not exist in v2 (contract 4.2). */
export const limitCheckSchema = Closed({
  namespace: Str(1, 512),
  identifier: Str(1, 512),
  limit: Int({ minimum: 1 }),
  duration: Int({ minimum: 1000, maximum: 2_592_000_000 }),
  cost: Type.Optional(Int()),
});

export function limitCheck(input: Static<typeof limitCheckSchema>): LimitCheck {
  return create(LimitCheckSchema, {
    namespace: input.namespace,
    identifier: input.identifier,
    limit: BigInt(input.limit),
    duration: BigInt(input.duration),
    cost: input.cost === undefined ? undefined : BigInt(input.cost),
  });
}

/**
 * Served as ratelimits.limit (contract) and ratelimit.limit (reference), through
 * the batcher: concurrent limits travel in one LimitBatch call.
 */
export const limit = route({
  schema: limitCheckSchema,
  async handle(input, { caller, requestId, services }) {
    const { result } = await services.limit(
      caller,
      create(LimitRequestSchema, { check: limitCheck(input), requestId }),
    );
    if (!result) throw new Error("Limit answered without a result");
    return {
      data: defined({
        limit: num(result.limit),
        remaining: num(result.remaining),
        reset: num(result.reset),
        success: result.success,
        overrideId: overrideIdOf(result),
      }),
    };
  },
});

export const overrideIdOf = (r: LimitResult) => (r.overrideId === "" ? undefined : r.overrideId);
