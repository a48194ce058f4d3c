import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  type GetRatelimitsRequest,
  type GetRatelimitsResponseSchema,
  type RatelimitBucketSchema,
  RatelimitGroupBy,
} from "@latchkey/proto/analytics/v1/analytics_pb";
import { invalidInput } from "@latchkey/runtime";
import { readableNamespaces } from "../access.ts";
import type { AnalyticsDeps } from "../deps.ts";
import type { RatelimitCount, RatelimitGrouping, RatelimitQuery } from "../store/analytics-store.ts";
import { granularityOf } from "./getVerifications.ts";
import { type QueryContext, type QueryRunner, validRange } from "./queries.ts";

type Response = MessageInitShape<typeof GetRatelimitsResponseSchema>;
type Bucket = MessageInitShape<typeof RatelimitBucketSchema> & {
  time: bigint;
  total: bigint;
  passed: bigint;
  refused: bigint;
};

/**
 * analytics.getRatelimits: rate-limit checks (ratelimits.limit, multiLimit and
 * the named limits verifications apply), in the structured form (passed and
 * refused per bucket, namespace and identifier, on every store) or Unkey's raw
 * form over the ratelimits_* views (ClickHouse only). Both restricted to the
 * namespaces the root key may read analytics of.
 */
export function getRatelimits(deps: AnalyticsDeps, runner: QueryRunner) {
  return async (req: GetRatelimitsRequest): Promise<Response> => {
    const ctx: QueryContext = {
      caller: req.caller,
      operation: "GetRatelimits",
      raw: req.query !== undefined,
    };
    if (req.query !== undefined) {
      if (
        req.start !== 0n ||
        req.end !== 0n ||
        req.namespaceId !== undefined ||
        req.identifier !== undefined
      ) {
        throw invalidInput(
          "/query",
          "query cannot be combined with the structured fields (start, end, namespaceId, ...).",
        );
      }
      const scope = {
        workspaceId: req.caller?.workspaceId ?? "",
        namespaceIds: readableNamespaces(req.caller, undefined),
      };
      return { rows: await runner.raw(ctx, req.query, scope, "ratelimits") };
    }
    const input = validGetRatelimits(req);
    const namespaceIds = readableNamespaces(req.caller, req.namespaceId);
    const limits = runner.limits;
    const counts = await runner.bounded(ctx, (signal) =>
      deps.store.ratelimits({ ...input, namespaceIds }, { limits, signal }),
    );
    return { buckets: toBuckets(counts, input.groupBy) };
  };
}

function validGetRatelimits(req: GetRatelimitsRequest): Omit<RatelimitQuery, "namespaceIds"> {
  const start = Number(req.start);
  const end = Number(req.end);
  const granularity = granularityOf(req.granularity);
  validRange(start, end, granularity);
  if (req.namespaceId !== undefined && (req.namespaceId.length < 1 || req.namespaceId.length > 255)) {
    throw invalidInput("/namespaceId", "namespaceId must be 1 to 255 characters.");
  }
  if (req.identifier !== undefined && (req.identifier.length < 1 || req.identifier.length > 255)) {
    throw invalidInput("/identifier", "identifier must be 1 to 255 characters.");
  }
  return {
    workspaceId: req.caller?.workspaceId ?? "",
    start,
    end,
    identifier: req.identifier,
    granularity,
    groupBy: groupingOf(req.groupBy),
  };
}

function groupingOf(g: RatelimitGroupBy): RatelimitGrouping {
  switch (g) {
    case RatelimitGroupBy.UNSPECIFIED:
      return "none";
    case RatelimitGroupBy.NAMESPACE:
      return "namespace";
    case RatelimitGroupBy.IDENTIFIER:
      return "identifier";
    default:
      throw invalidInput("/groupBy", "groupBy must be namespace or identifier.");
  }
}

/** One bucket per time and group with its passed and refused counts, ordered by time, namespace, identifier. */
function toBuckets(counts: RatelimitCount[], groupBy: RatelimitGrouping): Bucket[] {
  const buckets = new Map<string, Bucket>();
  for (const c of counts) {
    const id = `${c.time}\u0000${c.namespaceId}\u0000${c.identifier}`;
    let b = buckets.get(id);
    if (!b) {
      b = {
        time: BigInt(c.time),
        ...(groupBy === "none" ? {} : { namespaceId: c.namespaceId }),
        ...(groupBy === "identifier" ? { identifier: c.identifier } : {}),
        total: 0n,
        passed: 0n,
        refused: 0n,
      };
      buckets.set(id, b);
    }
    const n = BigInt(c.count);
    b.total += n;
    if (c.passed) b.passed += n;
    else b.refused += n;
  }
  return [...buckets.values()].sort(
    (a, b) =>
      Number(a.time) - Number(b.time) ||
      (a.namespaceId ?? "").localeCompare(b.namespaceId ?? "") ||
      (a.identifier ?? "").localeCompare(b.identifier ?? ""),
  );
}
