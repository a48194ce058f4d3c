import { ConnectError } from "@connectrpc/connect";
import type { Caller } from "@latchkey/proto/common/v1/common_pb";
import { domainError, ErrorReason, invalidInput } from "@latchkey/runtime";
import type { AnalyticsDeps } from "../deps.ts";
import { CALLER_FAILURES, failureMessage, QueryFailedError } from "../query-errors.ts";
import { checkRawQuery, type Dataset, type RawQueryScope } from "../raw-query.ts";
import {
  DAY,
  DEFAULT_QUERY_LIMITS,
  type Granularity,
  HOUR,
  type QueryLimit,
  QueryLimitError,
  type QueryLimits,
} from "../store/analytics-store.ts";

/** Latest accepted time: the API's bound on `expires`, 2100-01-01. */
export const MAX_TIME = 4_102_444_800_000;
/** Most buckets one answer spans (10,000 hours is about 14 months). */
export const MAX_BUCKETS = 10_000;
const BUCKET_MS: Record<Granularity, number> = { hour: HOUR, day: DAY, month: 28 * DAY };

/** Time a store gets past the limit to answer with its own, more precise error, before the timer answers. */
const TIMER_GRACE_MS = 500;

/** Who asks and in which form: what a query's errors and logs name. */
export interface QueryContext {
  caller: Caller | undefined;
  operation: "GetVerifications" | "GetRatelimits";
  /** The raw SQL form (its row limit reads differently). */
  raw: boolean;
}

/**
 * The bounds every analytics query runs under, structured or raw, verifications
 * or rate limits: one gate per process, so both operations share the
 * per-workspace and total caps (docs/limits.md).
 */
export class QueryRunner {
  readonly limits: QueryLimits;
  readonly gate: QueryGate;

  constructor(private readonly deps: AnalyticsDeps) {
    this.limits = deps.limits ?? DEFAULT_QUERY_LIMITS;
    this.gate = new QueryGate(this.limits.totalConcurrency, this.limits.concurrency);
  }

  /**
   * Runs one store call within the workspace's concurrency cap and the time
   * limit: at the limit the call is aborted (ClickHouse's request closes, which
   * cancels the query) and the caller answered, whether or not the store has
   * let go yet (PGlite cannot be interrupted). Errors become domain errors.
   */
  async bounded<T>(ctx: QueryContext, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const { gate, limits } = this;
    const workspaceId = ctx.caller?.workspaceId ?? "";
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
      return await this.answer(ctx, () => Promise.race([work, timeout]));
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Unkey's raw form: parsed, checked and rendered by checkRawQuery over the
   * dataset's views for `scope`, or refused; PRECONDITION_FAILED where the
   * store runs no SQL (no ClickHouse).
   */
  async raw(ctx: QueryContext, sql: string, scope: RawQueryScope, dataset: Dataset) {
    const checked = checkRawQuery(sql, scope, this.limits.maxRows, dataset);
    const run = this.deps.store.rawQuery?.bind(this.deps.store);
    if (!run) {
      throw domainError(
        ErrorReason.PRECONDITION_FAILED,
        "SQL analytics queries need ClickHouse, which this deployment does not run; use the structured form (start, end, granularity, groupBy).",
      );
    }
    const rows = await this.bounded(ctx, (signal) => run(checked, { limits: this.limits, signal }));
    return rows.map(toJson);
  }

  /** Runs a store call; a store that cannot answer becomes UNAVAILABLE, its cause logged once. */
  private async answer<T>(ctx: QueryContext, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (err instanceof ConnectError) throw err;
      if (err instanceof QueryLimitError) {
        throw domainError(ErrorReason.ANALYTICS_QUERY_LIMIT, limitMessage(err.limit, this.limits, ctx.raw));
      }
      if (err instanceof QueryFailedError) throw this.failed(ctx, err);
      this.deps.log.error(
        { err, workspaceId: ctx.caller?.workspaceId, operation: ctx.operation },
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
  private failed(ctx: QueryContext, err: QueryFailedError): ConnectError {
    const workspaceId = ctx.caller?.workspaceId;
    const { failure, clickhouse } = err;
    const code = { clickhouseCode: clickhouse?.code, clickhouseError: clickhouse?.type };
    this.deps.log.debug(
      { workspaceId, failure, ...code, clickhouseText: clickhouse?.text },
      "analytics query failed",
    );
    if (CALLER_FAILURES.has(failure)) {
      return domainError(ErrorReason.INVALID_ANALYTICS_QUERY, failureMessage(failure));
    }
    if (failure === "server_busy") {
      return domainError(ErrorReason.TOO_MANY_ANALYTICS_QUERIES, failureMessage(failure));
    }
    this.deps.log.error(
      { workspaceId, failure, ...code, operation: ctx.operation },
      "analytics store failed",
    );
    return domainError(ErrorReason.UNAVAILABLE, failureMessage(failure));
  }
}

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

/** A structured query's [start, end) and bucket size, checked. */
export function validRange(start: number, end: number, granularity: Granularity): void {
  if (start < 0 || start > MAX_TIME)
    throw invalidInput("/start", "start must be a unix ms time from 0 to 4102444800000.");
  if (end <= start || end > MAX_TIME) {
    throw invalidInput("/end", "end must be a unix ms time after start, at most 4102444800000.");
  }
  if ((end - start) / BUCKET_MS[granularity] > MAX_BUCKETS) {
    throw invalidInput(
      "/end",
      `The range spans more than ${MAX_BUCKETS} ${granularity} buckets.`,
      "Shorten the range or use a coarser granularity.",
    );
  }
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
