import type {
  Counter,
  CounterGroup,
  CounterGroupResult,
  CounterResult,
} from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import type { CounterCheck, CounterOutcome } from "./sliding-windows.ts";

/**
 * Counter operations on the wire between replicas: protobuf int64 is bigint,
 * counters are numbers. Messages are literals rather than create(): once per
 * forwarded check, on the hot path of every replica but one.
 */
export const toCounter = (c: CounterCheck): Counter => ({
  $typeName: "ratelimit.v1.Counter",
  key: c.key,
  limit: BigInt(c.limit),
  duration: BigInt(c.duration),
  cost: BigInt(c.cost),
});

export const fromCounter = (c: Counter): CounterCheck => ({
  key: c.key,
  limit: Number(c.limit),
  duration: Number(c.duration),
  cost: Number(c.cost),
});

export const toGroup = (g: readonly CounterCheck[]): CounterGroup => ({
  $typeName: "ratelimit.v1.CounterGroup",
  counters: g.map(toCounter),
});

export const toGroupResult = (outcomes: readonly CounterOutcome[]): CounterGroupResult => ({
  $typeName: "ratelimit.v1.CounterGroupResult",
  results: outcomes.map(
    (o): CounterResult => ({
      $typeName: "ratelimit.v1.CounterResult",
      success: o.success,
      refused: o.refused,
      limit: BigInt(o.limit),
      remaining: BigInt(o.remaining),
      reset: BigInt(o.reset),
    }),
  ),
});

export const fromGroupResult = (r: CounterGroupResult): CounterOutcome[] =>
  r.results.map((o) => ({
    success: o.success,
    refused: o.refused,
    limit: Number(o.limit),
    remaining: Number(o.remaining),
    reset: Number(o.reset),
  }));
