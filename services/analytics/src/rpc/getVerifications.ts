import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  type GetVerificationsRequest,
  type GetVerificationsResponseSchema,
  Granularity,
  GroupBy,
  type VerificationBucketSchema,
} from "@latchkey/proto/analytics/v1/analytics_pb";
import { invalidInput } from "@latchkey/runtime";
import { readableApis } from "../access.ts";
import type { AnalyticsDeps } from "../deps.ts";
import type {
  Granularity as BucketSize,
  Grouping,
  VerificationCount,
  VerificationQuery,
} from "../store/analytics-store.ts";
import { type QueryContext, type QueryRunner, validRange } from "./queries.ts";

type Response = MessageInitShape<typeof GetVerificationsResponseSchema>;
type OutcomeField =
  | "valid"
  | "rateLimited"
  | "usageExceeded"
  | "disabled"
  | "expired"
  | "notFound"
  | "forbidden"
  | "insufficientPermissions";
type Bucket = MessageInitShape<typeof VerificationBucketSchema> & {
  total: bigint;
  spentCredits: bigint;
} & Partial<Record<OutcomeField, bigint>>;

export function getVerifications(deps: AnalyticsDeps, runner: QueryRunner) {
  return async (req: GetVerificationsRequest): Promise<Response> => {
    const ctx = { caller: req.caller, operation: "GetVerifications", raw: req.query !== undefined } as const;
    if (req.query !== undefined) return rawQuery(runner, req, ctx);
    const input = validGetVerifications(req);
    const apiIds = readableApis(req.caller, req.apiId);
    const limits = runner.limits;
    const counts = await runner.bounded(ctx, (signal) =>
      deps.store.verifications({ ...input, apiIds }, { limits, signal }),
    );
    return { buckets: toBuckets(counts, input.groupBy) };
  };
}

/** The structured form, checked: every field present, the workspace from the caller. */
function validGetVerifications(req: GetVerificationsRequest): Omit<VerificationQuery, "apiIds"> {
  const start = Number(req.start);
  const end = Number(req.end);
  const granularity = granularityOf(req.granularity);
  validRange(start, end, granularity);
  if (req.apiId !== undefined && (req.apiId.length < 3 || req.apiId.length > 255)) {
    throw invalidInput("/apiId", "apiId must be 3 to 255 characters.");
  }
  for (const [field, value] of [
    ["keyId", req.keyId],
    ["identity", req.identity],
  ] as const) {
    if (value !== undefined && (value.length < 1 || value.length > 255)) {
      throw invalidInput(`/${field}`, `${field} must be 1 to 255 characters.`);
    }
  }
  if (req.tags.length > 10) throw invalidInput("/tags", "At most 10 tags may be given.");
  req.tags.forEach((tag, i) => {
    if (tag.length < 1 || tag.length > 128)
      throw invalidInput(`/tags/${i}`, "Each tag must be 1 to 128 characters.");
  });
  return {
    workspaceId: req.caller?.workspaceId ?? "",
    start,
    end,
    keyId: req.keyId,
    identity: req.identity,
    tags: [...new Set(req.tags)],
    granularity,
    groupBy: groupingOf(req.groupBy),
  };
}

export function granularityOf(g: Granularity): BucketSize {
  switch (g) {
    case Granularity.HOUR:
      return "hour";
    case Granularity.UNSPECIFIED:
    case Granularity.DAY:
      return "day";
    case Granularity.MONTH:
      return "month";
    default:
      throw invalidInput("/granularity", "granularity must be hour, day or month.");
  }
}

function groupingOf(g: GroupBy): Grouping {
  switch (g) {
    case GroupBy.UNSPECIFIED:
      return "none";
    case GroupBy.KEY:
      return "key";
    case GroupBy.IDENTITY:
      return "identity";
    case GroupBy.TAG:
      return "tag";
    case GroupBy.OUTCOME:
      return "outcome";
    default:
      throw invalidInput("/groupBy", "groupBy must be key, identity, tag or outcome.");
  }
}

/** One bucket per time and group, one count per outcome, ordered by time then group. */
function toBuckets(counts: VerificationCount[], groupBy: Grouping): Bucket[] {
  const buckets = new Map<string, Bucket>();
  for (const c of counts) {
    const id = `${c.time}\u0000${c.group}\u0000${c.externalId}`;
    let b = buckets.get(id);
    if (!b) {
      b = {
        time: BigInt(c.time),
        ...(groupBy === "none" ? {} : { group: c.group }),
        ...(groupBy === "identity" ? { externalId: c.externalId } : {}),
        total: 0n,
        spentCredits: 0n,
      };
      buckets.set(id, b);
    }
    const n = BigInt(c.count);
    b.total += n;
    b.spentCredits += BigInt(c.spentCredits);
    const field = OUTCOME_FIELDS[c.outcome];
    // An outcome this version does not know counts in total only.
    if (field) b[field] = (b[field] ?? 0n) + n;
  }
  return [...buckets.values()].sort((a, b) =>
    a.time === b.time ? (a.group ?? "").localeCompare(b.group ?? "") : Number(a.time) - Number(b.time),
  );
}

const OUTCOME_FIELDS: Record<string, OutcomeField> = {
  VALID: "valid",
  RATE_LIMITED: "rateLimited",
  USAGE_EXCEEDED: "usageExceeded",
  DISABLED: "disabled",
  EXPIRED: "expired",
  NOT_FOUND: "notFound",
  FORBIDDEN: "forbidden",
  INSUFFICIENT_PERMISSIONS: "insufficientPermissions",
};

/** Unkey's raw form: parsed, checked and rendered by checkRawQuery, or refused. */
async function rawQuery(
  runner: QueryRunner,
  req: GetVerificationsRequest,
  ctx: QueryContext,
): Promise<Response> {
  if (
    req.start !== 0n ||
    req.end !== 0n ||
    req.apiId !== undefined ||
    req.keyId !== undefined ||
    req.tags.length
  ) {
    throw invalidInput(
      "/query",
      "query cannot be combined with the structured fields (start, end, apiId, ...).",
    );
  }
  const apiIds = readableApis(req.caller, undefined);
  const scope = { workspaceId: req.caller?.workspaceId ?? "", apiIds };
  return { rows: await runner.raw(ctx, req.query ?? "", scope, "verifications") };
}
