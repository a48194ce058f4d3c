import type { MessageInitShape } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import {
  type GetVerificationsRequest,
  type GetVerificationsResponseSchema,
  Granularity,
  GroupBy,
  type VerificationBucketSchema,
} from "@latchkey/proto/analytics/v1/analytics_pb";
import { domainError, ErrorReason, invalidInput } from "@latchkey/runtime";
import { readableApis } from "../access.ts";
import type { AnalyticsDeps } from "../deps.ts";
import { CALLER_FAILURES, failureMessage, QueryFailedError } from "../query-errors.ts";
import { checkRawQuery } from "../raw-query.ts";
import {
  type Granularity as BucketSize,
  DAY,
  DEFAULT_QUERY_LIMITS,
  type Grouping,
  HOUR,
  type QueryLimit,
  QueryLimitError,
  type QueryLimits,
  type VerificationCount,
  type VerificationQuery,
} from "../store/analytics-store.ts";

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

/** Latest accepted time: the API's bound on `expires`, 2100-01-01. */
const MAX_TIME = 4_102_444_800_000;
/** Most buckets one answer spans (10,000 hours is about 14 months). */
const MAX_BUCKETS = 10_000;
const BUCKET_MS: Record<BucketSize, number> = { hour: HOUR, day: DAY, month: 28 * DAY };

/** Time a store gets past the limit to answer with its own, more precise error, before the timer answers. */
const TIMER_GRACE_MS = 500;

export function getVerifications(deps: AnalyticsDeps) {
  const limits = deps.limits ?? DEFAULT_QUERY_LIMITS;
  const gate = new QueryGate(limits.totalConcurrency, limits.concurrency);
  const bounded: Bounded = (req, run) => boundedCall(deps, limits, gate, req, run);
  return async (req: GetVerificationsRequest): Promise<Response> => {
    if (req.query !== undefined) return rawQuery(deps, limits, bounded, req);
    const input = validGetVerifications(req);
    const apiIds = readableApis(req.caller, req.apiId);
    const counts = await bounded(req, (signal) =>
      deps.store.verifications({ ...input, apiIds }, { limits, signal }),
    );
    return { buckets: toBuckets(counts, input.groupBy) };
  };
}

type Bounded = <T>(req: GetVerificationsRequest, run: (signal: AbortSignal) => Promise<T>) => Promise<T>;

/**
 * How many queries run, in all and per workspace. A workspace may hold at most
 * `perWorkspace` slots, and never more than half of `total`, so one workspace
 * at its worst leaves at least half of the process's queries to the others. A
 * slot is held until the store call settles, not merely until the caller is
 * answered: a query answered at its time limit that the database is still
 * finishing still counts.
 */
export class QueryGate {
  private readonly running = new Map<string, number>();
  private all = 0;
  readonly perWorkspace: number;

  constructor(
    readonly total: number,
    perWorkspace: number,
  ) {
    this.perWorkspace = Math.max(1, Math.min(perWorkspace, Math.floor(total / 2)));
  }

  /** Takes a slot for the workspace; answers which bound refused it, if one did. */
  tryEnter(workspaceId: string): "ok" | "workspace" | "total" {
    const n = this.running.get(workspaceId) ?? 0;
    if (n >= this.perWorkspace) return "workspace";
    if (this.all >= this.total) return "total";
    this.running.set(workspaceId, n + 1);
    this.all++;
    return "ok";
  }

  leave(workspaceId: string): void {
    const n = (this.running.get(workspaceId) ?? 1) - 1;
    if (n <= 0) this.running.delete(workspaceId);
    else this.running.set(workspaceId, n);
    this.all = Math.max(0, this.all - 1);
  }
}

/**
 * Runs one store call within the workspace's concurrency cap and the time
 * limit: at the limit the call is aborted (ClickHouse's request closes, which
 * cancels the query) and the caller answered, whether or not the store has
 * let go yet (PGlite cannot be interrupted). Errors become domain errors.
 */
async function boundedCall<T>(
  deps: AnalyticsDeps,
  limits: QueryLimits,
  gate: QueryGate,
  req: GetVerificationsRequest,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const workspaceId = req.caller?.workspaceId ?? "";
  const entered = gate.tryEnter(workspaceId);
  if (entered === "workspace") {
    throw domainError(
      ErrorReason.TOO_MANY_ANALYTICS_QUERIES,
      `A workspace may run at most ${gate.perWorkspace} analytics queries at once (ANALYTICS_QUERY_CONCURRENCY); retry when one has finished.`,
    );
  }
  if (entered === "total") {
    throw domainError(
      ErrorReason.TOO_MANY_ANALYTICS_QUERIES,
      `Analytics are running as many queries as they may at once (${gate.total}, ANALYTICS_QUERY_TOTAL_CONCURRENCY); retry shortly.`,
    );
  }
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let work: Promise<T>;
  try {
    work = run(controller.signal);
  } catch (err) {
    gate.leave(workspaceId);
    throw err;
  }
  work.then(
    () => gate.leave(workspaceId),
    () => gate.leave(workspaceId),
  );
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new QueryLimitError("time"));
      controller.abort();
    }, limits.timeoutMs + TIMER_GRACE_MS);
  });
  try {
    return await answer(deps, limits, req, () => Promise.race([work, timeout]));
  } finally {
    clearTimeout(timer);
  }
}

/** The structured form, checked: every field present, the workspace from the caller. */
function validGetVerifications(req: GetVerificationsRequest): Omit<VerificationQuery, "apiIds"> {
  const start = Number(req.start);
  const end = Number(req.end);
  if (start < 0 || start > MAX_TIME)
    throw invalidInput("/start", "start must be a unix ms time from 0 to 4102444800000.");
  if (end <= start || end > MAX_TIME) {
    throw invalidInput("/end", "end must be a unix ms time after start, at most 4102444800000.");
  }
  const granularity = granularityOf(req.granularity);
  if ((end - start) / BUCKET_MS[granularity] > MAX_BUCKETS) {
    throw invalidInput(
      "/end",
      `The range spans more than ${MAX_BUCKETS} ${granularity} buckets.`,
      "Shorten the range or use a coarser granularity.",
    );
  }
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

function granularityOf(g: Granularity): BucketSize {
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
  deps: AnalyticsDeps,
  limits: QueryLimits,
  bounded: Bounded,
  req: GetVerificationsRequest,
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
  const checked = checkRawQuery(
    req.query ?? "",
    { workspaceId: req.caller?.workspaceId ?? "", apiIds },
    limits.maxRows,
  );
  const run = deps.store.rawQuery?.bind(deps.store);
  if (!run) {
    throw domainError(
      ErrorReason.PRECONDITION_FAILED,
      "SQL analytics queries need ClickHouse, which this deployment does not run; use the structured form (start, end, granularity, groupBy).",
    );
  }
  const rows = await bounded(req, (signal) => run(checked, { limits, signal }));
  return { rows: rows.map(toJson) };
}

/** The code of each limit in a caller's message (docs/analytics-queries.md). */
const LIMIT_CODES: Record<QueryLimit, string> = {
  time: "time_limit",
  rows: "row_limit",
  bytes: "byte_limit",
  memory: "memory_limit",
};

/** What a caller reads when a query passes a limit. */
function limitMessage(limit: QueryLimit, limits: QueryLimits, raw: boolean): string {
  return `${limitText(limit, limits, raw)} (code: ${LIMIT_CODES[limit]}).`;
}

function limitText(limit: QueryLimit, limits: QueryLimits, raw: boolean): string {
  switch (limit) {
    case "time":
      return `The query ran longer than ${limits.timeoutMs / 1000} s, the limit for analytics queries; narrow its time range or aggregate more`;
    case "rows":
      return raw
        ? `The query answers more than ${limits.maxRows} rows, the limit for analytics queries; aggregate, or add a LIMIT`
        : `The query counts more than ${limits.structuredMaxRows} (bucket, group, outcome) rows; shorten the range, use a coarser granularity or filter`;
    case "bytes":
      return `The query answers more than ${limits.maxBytes} bytes, the limit for analytics queries; select fewer columns or rows`;
    case "memory":
      return "The query needs more memory than an analytics query may use; aggregate over fewer rows or groups";
  }
}

/** Runs a store call; a store that cannot answer becomes UNAVAILABLE, its cause logged once. */
async function answer<T>(
  deps: AnalyticsDeps,
  limits: QueryLimits,
  req: GetVerificationsRequest,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof ConnectError) throw err;
    if (err instanceof QueryLimitError) {
      throw domainError(
        ErrorReason.ANALYTICS_QUERY_LIMIT,
        limitMessage(err.limit, limits, req.query !== undefined),
      );
    }
    if (err instanceof QueryFailedError) throw failed(deps, req, err);
    deps.log.error(
      { err, workspaceId: req.caller?.workspaceId, operation: "GetVerifications" },
      "analytics store failed",
    );
    throw domainError(ErrorReason.UNAVAILABLE, "Analytics are unavailable right now; retry shortly.");
  }
}

/**
 * A failed raw query's answer: its class's code and our message. ClickHouse's
 * text is logged at debug only: it quotes the values an expression failed on.
 * A failure of ClickHouse itself (not of the query) is logged as an error too,
 * by its code alone.
 */
function failed(deps: AnalyticsDeps, req: GetVerificationsRequest, err: QueryFailedError): ConnectError {
  const workspaceId = req.caller?.workspaceId;
  const { failure, clickhouse } = err;
  const code = { clickhouseCode: clickhouse?.code, clickhouseError: clickhouse?.type };
  deps.log.debug(
    { workspaceId, failure, ...code, clickhouseText: clickhouse?.text },
    "analytics query failed",
  );
  if (CALLER_FAILURES.has(failure)) {
    return domainError(ErrorReason.INVALID_ANALYTICS_QUERY, failureMessage(failure));
  }
  if (failure === "server_busy") {
    return domainError(ErrorReason.TOO_MANY_ANALYTICS_QUERIES, failureMessage(failure));
  }
  deps.log.error({ workspaceId, failure, ...code, operation: "GetVerifications" }, "analytics store failed");
  return domainError(ErrorReason.UNAVAILABLE, failureMessage(failure));
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** A row as google.protobuf.Struct holds it: JSON values only. */
function toJson(row: Record<string, unknown>): { [k: string]: Json } {
  const out: { [k: string]: Json } = {};
  for (const [k, v] of Object.entries(row)) out[k] = jsonOf(v);
  return out;
}

function jsonOf(v: unknown): Json {
  if (v === null || v === undefined) return null;
  if (typeof v === "boolean" || typeof v === "string") return v;
  if (typeof v === "number") return Number.isFinite(v) ? v : String(v);
  if (typeof v === "bigint") return v.toString();
  if (Array.isArray(v)) return v.map(jsonOf);
  if (typeof v === "object") return toJson(v as Record<string, unknown>);
  return String(v);
}
