/** One verification as analytics keeps it (from keys.v1.KeyVerified). */
export interface Verification {
  requestId: string;
  /** Unix ms. */
  time: number;
  workspaceId: string;
  apiId: string;
  keyId: string;
  /** Empty when the key has no identity. */
  identityId: string;
  externalId: string;
  /** The public code: VALID, RATE_LIMITED, USAGE_EXCEEDED, ... */
  outcome: string;
  tags: string[];
  spentCredits: number;
  /** Milliseconds spent verifying. */
  latency: number;
}

/** One standalone rate-limit check (from ratelimit.v1.RatelimitChecked). */
export interface RatelimitCheck {
  requestId: string;
  time: number;
  workspaceId: string;
  namespaceId: string;
  identifier: string;
  passed: boolean;
  limit: number;
  remaining: number;
  reset: number;
  cost: number;
  overrideId: string;
  latency: number;
  /**
   * How many identical checks this row stands for (unset: one): the named-limit
   * checks of one call that share everything, counted in order, `remaining`
   * the last one's (RatelimitChecked.count).
   */
  count?: number;
}

export type Granularity = "hour" | "day" | "month";
export type Grouping = "none" | "key" | "identity" | "tag" | "outcome";

/** A checked structured query: every field is present, the workspace always. */
export interface VerificationQuery {
  workspaceId: string;
  /** [start, end) in unix ms. */
  start: number;
  end: number;
  /** The APIs the caller may see; undefined means every API of the workspace. */
  apiIds: string[] | undefined;
  keyId: string | undefined;
  /** Matches the identity id or the external id. */
  identity: string | undefined;
  /** A verification matches when it carries every one of these. */
  tags: string[];
  granularity: Granularity;
  groupBy: Grouping;
}

/** Verifications of one outcome in one bucket (and one group). */
export interface VerificationCount {
  /** Bucket start, unix ms (UTC). */
  time: number;
  /** Key id, identity id, tag or outcome; "" when not grouped. */
  group: string;
  /** With groupBy identity: the external id seen with that identity. */
  externalId: string;
  outcome: string;
  count: number;
  spentCredits: number;
}

export type RatelimitGrouping = "none" | "namespace" | "identifier";

/** A checked structured query over rate-limit checks: every field is present, the workspace always. */
export interface RatelimitQuery {
  workspaceId: string;
  /** [start, end) in unix ms. */
  start: number;
  end: number;
  /** The namespaces the caller may see; undefined means every namespace of the workspace. */
  namespaceIds: string[] | undefined;
  identifier: string | undefined;
  granularity: Granularity;
  groupBy: RatelimitGrouping;
}

/** Checks that passed (or were refused) in one bucket, namespace and identifier. */
export interface RatelimitCount {
  /** Bucket start, unix ms (UTC). */
  time: number;
  /** "" unless grouped by namespace or identifier. */
  namespaceId: string;
  /** "" unless grouped by identifier. */
  identifier: string;
  passed: boolean;
  count: number;
}

/** A raw-SQL query that passed checkRawQuery: safe to run as it is. */
export interface CheckedRawQuery {
  /** The SQL rendered from the parsed query, every view replaced by a workspace-filtered subquery. */
  sql: string;
  /** Most rows answered; the SQL asks for one more, so that a longer answer is seen. */
  maxRows: number;
}

/**
 * The bounds of every analytics query, structured or raw (docs/analytics-queries.md).
 * A query past one answers 422 naming it; past `concurrency` it answers 429.
 */
export interface QueryLimits {
  /** Longest a query may run (ANALYTICS_QUERY_TIMEOUT_MS). */
  timeoutMs: number;
  /** Most rows a raw query answers (ANALYTICS_QUERY_MAX_ROWS). */
  maxRows: number;
  /** Most bytes of JSON rows a raw query answers (ANALYTICS_QUERY_MAX_BYTES). */
  maxBytes: number;
  /** Most (bucket, group, outcome) counts a structured query reads (ANALYTICS_STRUCTURED_MAX_ROWS). */
  structuredMaxRows: number;
  /**
   * Most queries of one workspace running at once, per analytics process
   * (ANALYTICS_QUERY_CONCURRENCY); never more than half of totalConcurrency.
   */
  concurrency: number;
  /** Most queries of all workspaces running at once, per analytics process (ANALYTICS_QUERY_TOTAL_CONCURRENCY). */
  totalConcurrency: number;
}

export const DEFAULT_QUERY_LIMITS: QueryLimits = {
  timeoutMs: 10_000,
  maxRows: 10_000,
  maxBytes: 8 * 1024 * 1024,
  structuredMaxRows: 100_000,
  concurrency: 4,
  totalConcurrency: 16,
};

/** How a store runs one query: within these limits, stopped when `signal` aborts. */
export interface QueryOptions {
  limits: QueryLimits;
  signal?: AbortSignal;
}

export type QueryLimit = "time" | "rows" | "bytes" | "memory";

/** A query ran past one of its limits; getVerifications answers ANALYTICS_QUERY_LIMIT naming it. */
export class QueryLimitError extends Error {
  constructor(readonly limit: QueryLimit) {
    super(`analytics query past its ${limit} limit`);
  }
}

/**
 * Where verification and rate-limit events are kept and counted: ClickHouse in
 * production, PostgreSQL in the embedded default, memory for tests. All pass
 * testing/analytics-store.suite.ts.
 *
 * Counting once: every store counts the rows of one call once per requestId,
 * and a call repeating a `batchId` it has stored (for the same kind) once. Past
 * that they differ:
 * - by request id (ClickHouse, memory): an event whose requestId an earlier
 *   call stored is skipped, whoever repeats it (a NATS redelivery in other
 *   batches); the batch id is not needed and ignored.
 * - by batch (PostgreSQL): a repeated batch id stores nothing and answers 0,
 *   and rows are not looked up across calls, which keeps its writes cheap. Its
 *   writer, BufferedIngest, repeats nothing but a batch whose answer was lost,
 *   with the same rows and id. A call without a batch id is a batch of its own.
 * A batch id is per kind: the verifications and the rate-limit checks of one
 * batch may share it.
 */
export interface AnalyticsStore {
  /** Stores the verifications not stored yet; answers how many were new. */
  insertVerifications(rows: readonly Verification[], batchId?: string): Promise<number>;
  /** Stores the rate-limit checks not stored yet; answers how many were new. */
  insertRatelimits(rows: readonly RatelimitCheck[], batchId?: string): Promise<number>;
  /** Counts per bucket, group and outcome; buckets without verifications are absent. */
  verifications(query: VerificationQuery, options?: QueryOptions): Promise<VerificationCount[]>;
  /** Checks per bucket, group and passed flag; buckets without checks are absent. */
  ratelimits(query: RatelimitQuery, options?: QueryOptions): Promise<RatelimitCount[]>;
  /** Runs a checked raw query; undefined when this store cannot run SQL. */
  rawQuery?(query: CheckedRawQuery, options: QueryOptions): Promise<Record<string, unknown>[]>;
  /** Answers true when the store answers. */
  ping(): Promise<boolean>;
}

export const HOUR = 3_600_000;
export const DAY = 86_400_000;

/** The UTC start of the bucket holding `time`. */
export function bucketOf(time: number, granularity: Granularity): number {
  switch (granularity) {
    case "hour":
      return Math.floor(time / HOUR) * HOUR;
    case "day":
      return Math.floor(time / DAY) * DAY;
    case "month": {
      const d = new Date(time);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
    default: {
      const never: never = granularity;
      throw new Error(`unknown granularity ${never}`);
    }
  }
}
