import { domainError, ErrorReason } from "@latchkey/runtime";
import { quote } from "./clickhouse.ts";
import type { CheckedRawQuery } from "./store/analytics-store.ts";

/**
 * The reference's raw form, {query: "SELECT …"} (notes h.5), made safe
 * without trusting ClickHouse to contain it: the text is tokenized, and it
 * runs only if it is one SELECT (or WITH … SELECT) whose every FROM and JOIN
 * names one of the reference's table aliases or a subquery, whose every
 * function is on an allowlist, and which holds no statement, setting, format
 * or output clause. Each alias is replaced by a subquery over our tables that
 * carries the workspace filter (and the caller's API restriction), and the
 * whole is wrapped in a LIMIT. Anything else is refused with
 * INVALID_ANALYTICS_QUERY saying why. The store runs it read-only
 * (readonly=2) with time and memory limits.
 */

export const MAX_ROWS = 10_000;
const MAX_LENGTH = 10_000;

export interface RawQueryScope {
  workspaceId: string;
  /** The APIs the caller may read; undefined means all of the workspace's. */
  apiIds: string[] | undefined;
}

const COLUMNS =
  "workspace_id, api_id, api_id AS key_space_id, key_id, identity_id, external_id, outcome, tags";
const DIMENSIONS = "workspace_id, api_id, key_space_id, key_id, identity_id, external_id, outcome, tags";

/** The reference's aliases and what each reads; `where` is the scope filter. */
const ALIASES: Record<string, (where: string) => string> = {
  key_verifications_v1: (where) =>
    `SELECT request_id, time, ${COLUMNS}, spent_credits, latency FROM key_verifications_raw WHERE ${where}`,
  key_verifications_per_minute_v1: (where) =>
    `SELECT toStartOfMinute(toDateTime(intDiv(t, 1000), 'UTC')) AS time, ${DIMENSIONS}, count() AS count, sum(spent_credits) AS spent_credits FROM (SELECT time AS t, ${COLUMNS}, spent_credits FROM key_verifications_raw WHERE ${where}) GROUP BY time, ${DIMENSIONS}`,
  key_verifications_per_hour_v1: (where) =>
    `SELECT toDateTime(intDiv(t, 1000), 'UTC') AS time, ${DIMENSIONS}, count, spent_credits FROM (SELECT time AS t, ${COLUMNS}, count, spent_credits FROM key_verifications_per_hour WHERE ${where})`,
  key_verifications_per_day_v1: (where) =>
    `SELECT toDate(toDateTime(intDiv(t, 1000), 'UTC')) AS time, ${DIMENSIONS}, count, spent_credits FROM (SELECT time AS t, ${COLUMNS}, count, spent_credits FROM key_verifications_per_day WHERE ${where})`,
  key_verifications_per_month_v1: (where) =>
    `SELECT toStartOfMonth(toDateTime(intDiv(t, 1000), 'UTC')) AS time, ${DIMENSIONS}, sum(count) AS count, sum(spent_credits) AS spent_credits FROM (SELECT time AS t, ${COLUMNS}, count, spent_credits FROM key_verifications_per_day WHERE ${where}) GROUP BY time, ${DIMENSIONS}`,
};

/** Words that would make it more than a read, or change how it runs or where its result goes. */
const FORBIDDEN = new Set(
  "insert alter drop create attach detach rename truncate optimize system kill grant revoke set settings format into outfile use show describe explain exchange delete update check watch move undrop backup restore".split(
    " ",
  ),
);

/** Keywords that may stand before "(" without being a function call. */
const KEYWORDS_BEFORE_PAREN = new Set(
  "select from join in and or not as exists any all when then else on using where having by with case is like ilike between distinct over global union interval prewhere limit offset asc desc".split(
    " ",
  ),
);

/** Functions a query may call: aggregates, conditionals, time, strings and arrays. No table, dictionary, file or network access. */
const FUNCTIONS = new Set(
  [
    "count countIf countDistinct sum sumIf avg avgIf min minIf max maxIf any anyLast argMin argMax uniq uniqIf uniqExact uniqExactIf uniqCombined",
    "groupArray groupUniqArray quantile quantiles quantileExact quantileTDigest median topK",
    "if multiIf coalesce ifNull nullIf isNull isNotNull assumeNotNull",
    "toString toInt8 toInt16 toInt32 toInt64 toUInt8 toUInt16 toUInt32 toUInt64 toFloat32 toFloat64 toDate toDateTime toDecimal64",
    "toStartOfMinute toStartOfFiveMinute toStartOfFifteenMinutes toStartOfHour toStartOfDay toStartOfWeek toStartOfMonth toStartOfQuarter toStartOfYear toMonday",
    "toYear toMonth toDayOfMonth toDayOfWeek toHour toMinute toYYYYMM toYYYYMMDD toUnixTimestamp fromUnixTimestamp fromUnixTimestamp64Milli toStartOfInterval",
    "toIntervalSecond toIntervalMinute toIntervalHour toIntervalDay toIntervalWeek toIntervalMonth toIntervalYear",
    "now today yesterday dateDiff date_trunc formatDateTime addDays addHours subtractDays subtractHours",
    "intDiv round floor ceil abs plus minus multiply divide modulo greatest least",
    "length empty notEmpty lower upper concat substring startsWith endsWith position like notLike match replaceAll splitByChar",
    "has hasAll hasAny arrayJoin arraySort arrayDistinct arrayFilter arrayMap arrayCount arrayExists indexOf tuple array arrayConcat arrayElement",
    "and or not equals notEquals less greater lessOrEquals greaterOrEquals",
  ]
    .join(" ")
    .split(" ")
    .map((f) => f.toLowerCase()),
);

type Token =
  | { kind: "word"; text: string; lower: string; quoted: boolean }
  | { kind: "string"; text: string }
  | { kind: "number"; text: string }
  | { kind: "punct"; text: string };

const refuse = (why: string) => domainError(ErrorReason.INVALID_ANALYTICS_QUERY, why);

function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const rest = () => sql.slice(i);
  while (i < sql.length) {
    const c = sql[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (sql.startsWith("--", i) || sql.startsWith("/*", i) || c === "#") {
      throw refuse("Comments are not allowed in analytics queries.");
    }
    if (c === "'") {
      let j = i + 1;
      while (j < sql.length && sql[j] !== "'") j += sql[j] === "\\" ? 2 : 1;
      if (j >= sql.length) throw refuse("The query has an unterminated string.");
      if (sql[j + 1] === "'") throw refuse("Write a quote inside a string as \\', not ''.");
      tokens.push({ kind: "string", text: sql.slice(i, j + 1) });
      i = j + 1;
      continue;
    }
    if (c === "`" || c === '"') {
      const j = sql.indexOf(c, i + 1);
      const inner = j < 0 ? "" : sql.slice(i + 1, j);
      if (j < 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(inner)) {
        throw refuse(
          `Quoted identifiers may hold only letters, digits and underscores: ${sql.slice(i, i + 40)}`,
        );
      }
      tokens.push({ kind: "word", text: inner, lower: inner.toLowerCase(), quoted: true });
      i = j + 1;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest());
    if (word) {
      tokens.push({ kind: "word", text: word[0], lower: word[0].toLowerCase(), quoted: false });
      i += word[0].length;
      continue;
    }
    const number = /^(0x[0-9a-fA-F]+|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)/.exec(rest());
    if (number) {
      tokens.push({ kind: "number", text: number[0] });
      i += number[0].length;
      continue;
    }
    const punct = /^(->|==|!=|<>|<=|>=|\|\||[(),.;*+\-/%=<>?:[\]])/.exec(rest());
    if (punct) {
      tokens.push({ kind: "punct", text: punct[0] });
      i += punct[0].length;
      continue;
    }
    throw refuse(`Unexpected character '${c}' in the query.`);
  }
  return tokens;
}

const isPunct = (t: Token | undefined, text: string) => t?.kind === "punct" && t.text === text;
const isWord = (t: Token | undefined, lower: string) => t?.kind === "word" && !t.quoted && t.lower === lower;

/** Checks and rewrites a raw query, or throws INVALID_ANALYTICS_QUERY naming what is not allowed. */
export function checkRawQuery(sql: string, scope: RawQueryScope): CheckedRawQuery {
  if (sql.trim().length === 0) throw refuse("The query is empty.");
  if (sql.length > MAX_LENGTH) throw refuse(`The query is longer than ${MAX_LENGTH} characters.`);
  const tokens = tokenize(sql);
  while (isPunct(tokens[tokens.length - 1], ";")) tokens.pop();
  if (tokens.some((t) => isPunct(t, ";"))) throw refuse("Only one statement is allowed.");
  const first = tokens[0];
  if (!isWord(first, "select") && !isWord(first, "with")) {
    throw refuse("Only SELECT queries are allowed.");
  }
  const where = [
    `workspace_id = ${quote(scope.workspaceId)}`,
    ...(scope.apiIds
      ? [`api_id IN (${scope.apiIds.length ? scope.apiIds.map(quote).join(", ") : "''"})`]
      : []),
  ].join(" AND ");

  let out = "";
  // Tokens are joined with single spaces, except around "." and inside call parentheses, where ClickHouse wants none.
  const emit = (text: string, glued = false) => {
    out += out === "" || glued ? text : ` ${text}`;
  };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    const prev = tokens[i - 1];
    const next = tokens[i + 1];
    if (t.kind !== "word") {
      emit(t.text, glued(prev, t));
      continue;
    }
    if (!t.quoted && FORBIDDEN.has(t.lower)) {
      throw refuse(`'${t.text.toUpperCase()}' is not allowed: only read-only SELECT queries run.`);
    }
    const readsTable = !t.quoted && (t.lower === "from" || (t.lower === "join" && !isWord(prev, "array")));
    if (readsTable) {
      emit(t.text);
      if (isPunct(next, "(")) continue;
      const alias = next?.kind === "word" ? ALIASES[next.lower] : undefined;
      if (!alias || isPunct(tokens[i + 2], ".") || isPunct(tokens[i + 2], "(")) {
        throw refuse(
          `Queries may read only ${Object.keys(ALIASES).join(", ")} (or a subquery); '${next?.text ?? ""}' is not one of them.`,
        );
      }
      const named = isWord(tokens[i + 2], "as") || isUserAlias(tokens[i + 2]);
      emit(`(${alias(where)})${named ? "" : ` AS ${(next as { lower: string }).lower}`}`);
      i++;
      continue;
    }
    if (!t.quoted && t.lower === "in" && !isPunct(next, "(")) {
      throw refuse("IN takes a parenthesised list or subquery, never a table name.");
    }
    if (isPunct(next, "(") && !(KEYWORDS_BEFORE_PAREN.has(t.lower) && !t.quoted)) {
      if (!FUNCTIONS.has(t.lower) || isPunct(prev, ".")) {
        throw refuse(`The function '${t.text}' is not allowed in analytics queries.`);
      }
    }
    emit(t.quoted ? `\`${t.text}\`` : t.text, glued(prev, t));
  }
  return { sql: `SELECT * FROM (${out}) LIMIT ${MAX_ROWS}`, maxRows: MAX_ROWS };
}

/** Whether `t` follows `prev` without a space: around ".", inside parentheses, before ",", and in calls. */
function glued(prev: Token | undefined, t: Token): boolean {
  return (
    isPunct(t, ".") ||
    isPunct(t, ",") ||
    isPunct(t, ")") ||
    isPunct(prev, ".") ||
    isPunct(prev, "(") ||
    (isPunct(t, "(") && prev?.kind === "word")
  );
}

/** A bare word after a table that names it (FROM t v), as opposed to the clause that follows. */
function isUserAlias(t: Token | undefined): boolean {
  if (t?.kind !== "word") return false;
  if (t.quoted) return true;
  return !CLAUSES.has(t.lower);
}

const CLAUSES = new Set(
  "where prewhere group order limit having join inner left right full cross array any all asof global on using union except intersect final sample offset as with".split(
    " ",
  ),
);
