import { ClickHouseError } from "@clickhouse/client";
import { type QueryLimit, QueryLimitError } from "./store/analytics-store.ts";

/**
 * How an analytics query failed, as Latchkey tells a caller: a code per class
 * of ClickHouse error, each with a message of our own (docs/analytics-queries.md
 * lists them). ClickHouse's own text is never shown to the caller: it quotes the
 * values an expression failed on, which would be another workspace's if an
 * expression ever saw its rows, and it spells out our internal SQL.
 */
export type QueryFailure =
  /** ClickHouse could not plan the query: an unknown name, wrong argument types, an aggregate misplaced. */
  | "query_invalid"
  /** A value could not be parsed or converted (toInt64 of a word, toDate of a non-date, a CAST). */
  | "conversion_failed"
  /** Division by zero (intDiv, modulo) or an overflow. */
  | "arithmetic_error"
  /** An argument out of its range: an array index, a size, a position. */
  | "argument_out_of_range"
  /** A regular expression (match, LIKE) that does not compile. */
  | "invalid_regex"
  /** Any other error of the query while it ran. */
  | "query_failed"
  /** ClickHouse is answering as many queries as it may; retry. */
  | "server_busy"
  /** ClickHouse cannot be reached, or refused Latchkey itself (its user, its settings). */
  | "unavailable";

/** The classes a caller can fix by changing the query: 400. The rest are 503. */
export const CALLER_FAILURES: ReadonlySet<QueryFailure> = new Set([
  "query_invalid",
  "conversion_failed",
  "arithmetic_error",
  "argument_out_of_range",
  "invalid_regex",
  "query_failed",
]);

/** What a caller reads for each class; the code ends the message so that a client can match it. */
export const FAILURE_MESSAGES: Record<QueryFailure, string> = {
  query_invalid:
    "The query failed while being planned: a column or alias it names does not exist where it is used, a function has arguments of the wrong type or number, or an aggregate is where it may not be",
  conversion_failed:
    "The query failed while running: a value could not be converted to the type asked for (toInt64 or CAST of a string that is not a number, toDate of one that is not a date, ...)",
  arithmetic_error:
    "The query failed while running: a division by zero (intDiv, modulo) or an arithmetic overflow",
  argument_out_of_range:
    "The query failed while running: an argument was out of its range (an array index, a size, a position)",
  invalid_regex: "The query failed while running: a regular expression does not compile",
  query_failed: "The query failed while running",
  server_busy: "Analytics are answering as many queries as they may; retry shortly",
  unavailable: "Analytics are unavailable right now; retry shortly",
};

/** The caller's message for a failure: ours, never ClickHouse's, with its code. */
export const failureMessage = (failure: QueryFailure) => `${FAILURE_MESSAGES[failure]} (code: ${failure}).`;

/** A raw query failed; getVerifications answers its class, and logs `clickhouse` (ClickHouse's text) at debug only. */
export class QueryFailedError extends Error {
  constructor(
    readonly failure: QueryFailure,
    /** ClickHouse's error: its code and name for the log, and its text, which may quote rows. */
    readonly clickhouse?: { code: number | undefined; type: string | undefined; text: string },
  ) {
    super(`analytics query failed: ${failure}`);
  }
}

/** ClickHouse's codes, by the class of failure they are. */
const FAILURES_BY_CODE: Record<number, QueryFailure | QueryLimit> = {
  // Past a limit of the profile or the query's settings.
  159: "time", // TIMEOUT_EXCEEDED
  160: "time", // TOO_SLOW
  394: "time", // QUERY_WAS_CANCELLED: our timer closed the request
  158: "rows", // TOO_MANY_ROWS
  396: "rows", // TOO_MANY_ROWS_OR_BYTES (max_result_rows / max_result_bytes)
  307: "bytes", // TOO_MANY_BYTES
  241: "memory", // MEMORY_LIMIT_EXCEEDED (per query, or the query user's total)
  191: "memory", // SET_SIZE_LIMIT_EXCEEDED
  // Values that do not convert.
  6: "conversion_failed", // CANNOT_PARSE_TEXT
  27: "conversion_failed", // CANNOT_PARSE_INPUT_ASSERTION_FAILED
  32: "conversion_failed", // ATTEMPT_TO_READ_AFTER_EOF (parsing a short string)
  38: "conversion_failed", // CANNOT_PARSE_DATE
  41: "conversion_failed", // CANNOT_PARSE_DATETIME
  53: "conversion_failed", // TYPE_MISMATCH
  70: "conversion_failed", // CANNOT_CONVERT_TYPE
  72: "conversion_failed", // CANNOT_PARSE_NUMBER
  321: "conversion_failed", // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
  // Arithmetic.
  153: "arithmetic_error", // ILLEGAL_DIVISION
  407: "arithmetic_error", // DECIMAL_OVERFLOW
  // Arguments out of range.
  69: "argument_out_of_range", // ARGUMENT_OUT_OF_BOUND
  127: "argument_out_of_range", // ILLEGAL_INDEX
  128: "argument_out_of_range", // TOO_LARGE_ARRAY_SIZE
  131: "argument_out_of_range", // TOO_LARGE_STRING_SIZE
  190: "argument_out_of_range", // SIZES_OF_ARRAYS_DONT_MATCH
  353: "argument_out_of_range", // INDEX_OF_POSITIONAL_ARGUMENT_IS_OUT_OF_RANGE
  // Regular expressions.
  427: "invalid_regex", // CANNOT_COMPILE_REGEXP
  // The query cannot be planned as written.
  1: "query_invalid", // UNSUPPORTED_METHOD
  8: "query_invalid", // THERE_IS_NO_COLUMN
  10: "query_invalid", // NOT_FOUND_COLUMN_IN_BLOCK
  16: "query_invalid", // NO_SUCH_COLUMN_IN_TABLE
  36: "query_invalid", // BAD_ARGUMENTS
  42: "query_invalid", // NUMBER_OF_ARGUMENTS_DOESNT_MATCH
  43: "query_invalid", // ILLEGAL_TYPE_OF_ARGUMENT
  44: "query_invalid", // ILLEGAL_COLUMN
  46: "query_invalid", // UNKNOWN_FUNCTION
  47: "query_invalid", // UNKNOWN_IDENTIFIER
  48: "query_invalid", // NOT_IMPLEMENTED
  51: "query_invalid", // EMPTY_LIST_OF_COLUMNS_QUERIED
  59: "query_invalid", // ILLEGAL_TYPE_OF_COLUMN_FOR_FILTER
  60: "query_invalid", // UNKNOWN_TABLE
  62: "query_invalid", // SYNTAX_ERROR
  179: "query_invalid", // MULTIPLE_EXPRESSIONS_FOR_ALIAS
  183: "query_invalid", // UNEXPECTED_EXPRESSION
  184: "query_invalid", // ILLEGAL_AGGREGATION
  215: "query_invalid", // NOT_AN_AGGREGATE
  229: "query_invalid", // QUERY_IS_TOO_LARGE
  352: "query_invalid", // AMBIGUOUS_COLUMN_NAME
  386: "query_invalid", // NO_COMMON_TYPE
  403: "query_invalid", // INVALID_JOIN_ON_EXPRESSION
  // ClickHouse, not the query.
  202: "server_busy", // TOO_MANY_SIMULTANEOUS_QUERIES (the query user's max_concurrent_queries_for_user)
  201: "server_busy", // QUOTA_EXCEEDED
  439: "server_busy", // CANNOT_SCHEDULE_TASK
  81: "unavailable", // UNKNOWN_DATABASE
  115: "unavailable", // UNKNOWN_SETTING
  164: "unavailable", // READONLY: a setting the query user's profile does not allow
  192: "unavailable", // UNKNOWN_USER
  193: "unavailable", // WRONG_PASSWORD
  209: "unavailable", // SOCKET_TIMEOUT
  210: "unavailable", // NETWORK_ERROR
  236: "unavailable", // ABORTED
  497: "unavailable", // ACCESS_DENIED
  516: "unavailable", // AUTHENTICATION_FAILED
};

const LIMITS: ReadonlySet<string> = new Set<QueryLimit>(["time", "rows", "bytes", "memory"]);

/**
 * ClickHouse's code and error name: a ClickHouseError's (any copy of the class:
 * another package's client throws its own), or the leading "Code: N" of the
 * text of an error the client could not parse (18.16's).
 */
export function clickhouseCode(err: unknown): { code: number | undefined; type: string | undefined } {
  if (err instanceof ClickHouseError) return { code: Number(err.code), type: err.type };
  const { code, type } = (err ?? {}) as { code?: unknown; type?: unknown };
  if (typeof code === "string" && /^\d+$/.test(code)) {
    return { code: Number(code), type: typeof type === "string" ? type : undefined };
  }
  const m = /^\s*(?:\{"exception":\s*")?Code: (\d+)/.exec((err as Error | undefined)?.message ?? "");
  return { code: m ? Number(m[1]) : undefined, type: undefined };
}

/**
 * What a raw query's error is, for the caller: a limit (QueryLimitError), or a
 * class of failure (QueryFailedError) carrying ClickHouse's text for the log
 * alone. Anything that is not ClickHouse's (a dropped connection, an answer
 * that is not JSON rows) is `unavailable`.
 */
export function failureOf(err: unknown): QueryLimitError | QueryFailedError {
  if (err instanceof QueryLimitError || err instanceof QueryFailedError) return err;
  const text = (err as Error | undefined)?.message ?? String(err);
  const { code, type } = clickhouseCode(err);
  const kind = code === undefined ? undefined : FAILURES_BY_CODE[code];
  if (kind !== undefined && LIMITS.has(kind)) {
    // 396 is rows or bytes; which one is in the text, read here and never shown.
    if (code === 396 && /max bytes/i.test(text)) return new QueryLimitError("bytes");
    return new QueryLimitError(kind as QueryLimit);
  }
  const failure = (kind as QueryFailure | undefined) ?? (code === undefined ? "unavailable" : "query_failed");
  return new QueryFailedError(failure, { code, type, text });
}
