import { Granularity, GroupBy, type VerificationBucket } from "@latchkey/proto/analytics/v1/analytics_pb";
import { Type } from "@sinclair/typebox";
import { route } from "../../route.ts";
import { Closed, Enum, Int, Str } from "../../schema.ts";

const GRANULARITIES = { hour: Granularity.HOUR, day: Granularity.DAY, month: Granularity.MONTH } as const;
const GROUPINGS = {
  key: GroupBy.KEY,
  identity: GroupBy.IDENTITY,
  tag: GroupBy.TAG,
  outcome: GroupBy.OUTCOME,
} as const;

/**
 * Two forms (docs/analytics-queries.md): the structured one, {start, end, filters, granularity,
 * groupBy}, answered with one bucket per time (and group); and Unkey's
 * raw one, {query: "SELECT …"} as Unkey's, answered with its rows. Without a
 * query, start and end are required; the service refuses a query combined
 * with structured fields.
 */
const schema = Type.Object(
  {
    query: Type.Optional(Str(1, 10_000)),
    start: Type.Optional(Int({ maximum: 4_102_444_800_000 })),
    end: Type.Optional(Int({ maximum: 4_102_444_800_000 })),
    apiId: Type.Optional(Str(3, 255)),
    keyId: Type.Optional(Str(1, 255)),
    identity: Type.Optional(Str(1, 255)),
    tags: Type.Optional(Type.Array(Str(1, 128), { maxItems: 10 })),
    granularity: Type.Optional(Enum(["hour", "day", "month"] as const)),
    groupBy: Type.Optional(Enum(["key", "identity", "tag", "outcome"] as const)),
  },
  {
    additionalProperties: false,
    if: { properties: { query: {} }, required: ["query"] },
    else: { properties: { start: {}, end: {} }, required: ["start", "end"] },
  },
);

type Grouping = keyof typeof GROUPINGS;

const count = Type.Integer({ minimum: 0 });

/** A bucket of the structured form; the group's field is there when grouped by it. */
const Bucket = Closed({
  time: Type.Integer({ minimum: 0, examples: [1_767_225_600_000] }),
  keyId: Type.Optional(Type.String()),
  identityId: Type.Optional(Type.String()),
  externalId: Type.Optional(Type.String()),
  tag: Type.Optional(Type.String()),
  outcome: Type.Optional(Type.String({ examples: ["VALID"] })),
  total: count,
  valid: count,
  rateLimited: count,
  usageExceeded: count,
  disabled: count,
  expired: count,
  notFound: count,
  forbidden: count,
  insufficientPermissions: count,
  spentCredits: count,
});

/** Buckets for the structured form; for `query`, its rows, whatever columns it selects. */
const Verifications = Type.Union([
  Type.Array(Bucket),
  Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: "The rows of a `query`." }),
]);

export const getVerifications = route({
  description:
    'Beyond Unkey: besides Unkey\'s SQL form (`{"query": "SELECT …"}`, with ClickHouse), a structured query: `start`, `end`, `granularity` (`hour`, `day`, `month`), `groupBy` (`key`, `identity`, `tag`, `outcome`) and the filters `apiId`, `keyId`, `identity`, `tags`, answered with buckets of counts by outcome, on every storage, the embedded one included.',
  answer: Verifications,
  example: { start: 1_767_225_600_000, end: 1_767_312_000_000, granularity: "hour", groupBy: "outcome" },
  rootKey: {
    needs: ["api.<apiId>.read_analytics"],
    also: "for each API it reads; `api.*.read_analytics` for all",
  },
  errors: [412, 422, 429],
  schema,
  async handle(input, { caller, services }) {
    const res = await services.analytics.getVerifications({
      caller,
      query: input.query,
      start: input.start === undefined ? 0n : BigInt(input.start),
      end: input.end === undefined ? 0n : BigInt(input.end),
      apiId: input.apiId,
      keyId: input.keyId,
      identity: input.identity,
      tags: input.tags ?? [],
      granularity:
        input.granularity === undefined ? Granularity.UNSPECIFIED : GRANULARITIES[input.granularity],
      groupBy: input.groupBy === undefined ? GroupBy.UNSPECIFIED : GROUPINGS[input.groupBy],
    });
    if (input.query !== undefined) return { data: res.rows };
    return { data: res.buckets.map((b) => bucket(b, input.groupBy)) };
  },
});

/** The group's field is named after what was grouped by: keyId, identityId (with externalId), tag or outcome. */
const GROUP_FIELD = {
  key: "keyId",
  identity: "identityId",
  tag: "tag",
  outcome: "outcome",
} as const satisfies Record<Grouping, string>;

function bucket(b: VerificationBucket, groupBy: Grouping | undefined) {
  const out: Record<string, unknown> = { time: Number(b.time) };
  if (groupBy !== undefined) {
    out[GROUP_FIELD[groupBy]] = b.group ?? "";
    if (groupBy === "identity" && b.externalId !== undefined) out["externalId"] = b.externalId;
  }
  out["total"] = Number(b.total);
  out["valid"] = Number(b.valid);
  out["rateLimited"] = Number(b.rateLimited);
  out["usageExceeded"] = Number(b.usageExceeded);
  out["disabled"] = Number(b.disabled);
  out["expired"] = Number(b.expired);
  out["notFound"] = Number(b.notFound);
  out["forbidden"] = Number(b.forbidden);
  out["insufficientPermissions"] = Number(b.insufficientPermissions);
  out["spentCredits"] = Number(b.spentCredits);
  return out;
}
