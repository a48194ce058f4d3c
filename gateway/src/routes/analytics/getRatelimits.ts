import {
  Granularity,
  type RatelimitBucket,
  RatelimitGroupBy,
} from "@latchkey/proto/analytics/v1/analytics_pb";
import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, Enum, Int, Str } from "../../schema.ts";

const GRANULARITIES = { hour: Granularity.HOUR, day: Granularity.DAY, month: Granularity.MONTH } as const;
const GROUPINGS = {
  namespace: RatelimitGroupBy.NAMESPACE,
  identifier: RatelimitGroupBy.IDENTIFIER,
} as const;

/**
 * Two forms, as getVerifications (docs/analytics-queries.md): Unkey's
 * {query: "SELECT …"} over the ratelimits_* views, answered with its rows; and
 * the structured one, {start, end, filters, granularity, groupBy}, answered
 * with passed and refused checks per bucket (and namespace, identifier).
 */
const schema = Type.Object(
  {
    query: Type.Optional(Str(1, 10_000)),
    start: Type.Optional(Int({ maximum: 4_102_444_800_000 })),
    end: Type.Optional(Int({ maximum: 4_102_444_800_000 })),
    namespaceId: Type.Optional(Str(1, 255)),
    identifier: Type.Optional(Str(1, 255)),
    granularity: Type.Optional(Enum(["hour", "day", "month"] as const)),
    groupBy: Type.Optional(Enum(["namespace", "identifier"] as const)),
  },
  {
    additionalProperties: false,
    if: { properties: { query: {} }, required: ["query"] },
    else: { properties: { start: {}, end: {} }, required: ["start", "end"] },
  },
);

const count = Type.Integer({ minimum: 0 });

/** A bucket of the structured form: namespaceId when grouped, identifier too when grouped by it. */
const Bucket = Closed({
  time: Type.Integer({ minimum: 0, examples: [1_767_225_600_000] }),
  namespaceId: Type.Optional(Type.String({ examples: ["rlns_123"] })),
  identifier: Type.Optional(Type.String()),
  total: count,
  passed: count,
  refused: count,
});

const Ratelimits = Type.Union([
  Type.Array(Bucket),
  Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: "The rows of a `query`." }),
]);

export const getRatelimits = route({
  description:
    'Unkey\'s SQL form (`{"query": "SELECT …"}` over `ratelimits_v1` and `ratelimits_per_{minute,hour,day,month}_v1`, with ClickHouse) and, beyond Unkey, a structured query: `start`, `end`, `granularity` (`hour`, `day`, `month`), `groupBy` (`namespace`, `identifier`) and the filters `namespaceId`, `identifier`, answered with passed and refused checks per bucket, on every storage, the embedded one included.',
  answer: Ratelimits,
  example: { start: 1_767_225_600_000, end: 1_767_312_000_000, granularity: "hour", groupBy: "namespace" },
  rootKey: {
    needs: ["ratelimit.<namespaceId>.read_analytics"],
    also: "for each namespace it reads; `ratelimit.*.read_analytics` for all",
  },
  errors: [412, 422, 429],
  schema,
  async handle(input, { caller, services }) {
    const res = await services.analytics.getRatelimits({
      caller,
      query: input.query,
      start: input.start === undefined ? 0n : BigInt(input.start),
      end: input.end === undefined ? 0n : BigInt(input.end),
      namespaceId: input.namespaceId,
      identifier: input.identifier,
      granularity:
        input.granularity === undefined ? Granularity.UNSPECIFIED : GRANULARITIES[input.granularity],
      groupBy: input.groupBy === undefined ? RatelimitGroupBy.UNSPECIFIED : GROUPINGS[input.groupBy],
    });
    if (input.query !== undefined) return { data: res.rows };
    return { data: res.buckets.map(bucket) };
  },
});

function bucket(b: RatelimitBucket) {
  return {
    time: Number(b.time),
    ...(b.namespaceId === undefined ? {} : { namespaceId: b.namespaceId }),
    ...(b.identifier === undefined ? {} : { identifier: b.identifier }),
    total: Number(b.total),
    passed: Number(b.passed),
    refused: Number(b.refused),
  };
}
