import { domainError, ErrorReason } from "@latchkey/runtime";
import { quote } from "./clickhouse.ts";
import type { Expr, From, Join, Name, Query, Select, TableRef, TypeName } from "./sql/ast.ts";
import { isSyntaxProblem, parseQuery } from "./sql/grammar.ts";
import type { CheckedRawQuery } from "./store/analytics-store.ts";

/**
 * Unkey's raw form, {query: "SELECT …"}, made safe by construction:
 * the text is parsed by a grammar of the supported SELECT subset
 * (sql/grammar.ts), and the SQL that runs is rendered here from the tree, never
 * copied from the text. Rendering is the allow-list: every node kind it knows
 * is written out in a canonical spelling (identifiers backquoted, strings
 * re-escaped, operators parenthesised, functions under their allow-listed
 * names); every other kind, and every table that is not one of the documented
 * views or a CTE of the query, is refused with INVALID_ANALYTICS_QUERY naming
 * it. Each view reference becomes a subquery over our tables carrying the
 * workspace filter (and the caller's API restriction), so the caller's SQL
 * never reaches a table directly. See docs/analytics-queries.md.
 */

/** Longest query text accepted. */
export const MAX_QUERY_LENGTH = 10_000;
/** Deepest nesting of parentheses, subqueries and expressions. */
export const MAX_DEPTH = 40;
/** Most words, numbers, strings and symbols in a query: bounds the parser's work (about 0.1 ms each). */
export const MAX_TOKENS = 2_000;
/** Most view references in one query, CTE references counted each time they are used. */
export const MAX_TABLE_REFERENCES = 16;

export interface RawQueryScope {
  workspaceId: string;
  /** The APIs the caller may read (verification views); undefined means all of the workspace's. */
  apiIds?: string[] | undefined;
  /** The namespaces the caller may read (rate-limit views); undefined means all of the workspace's. */
  namespaceIds?: string[] | undefined;
}

/** Which views a query may read: analytics.getVerifications' or analytics.getRatelimits'. */
export type Dataset = "verifications" | "ratelimits";

const COLUMNS =
  "workspace_id, api_id, api_id AS key_space_id, key_id, identity_id, external_id, outcome, tags";
const DIMENSIONS = "workspace_id, api_id, key_space_id, key_id, identity_id, external_id, outcome, tags";

/**
 * A LIMIT no workspace reaches, closing each view's filtered subquery. No
 * optimizer moves a filter below a LIMIT (that would change which rows it
 * keeps), so the caller's WHERE, HAVING, ON and SELECT expressions run only
 * above the workspace filter and only ever see the caller's rows: without it,
 * ClickHouse's predicate push-down, filter merging and PREWHERE (on by default
 * in current releases, whatever enable_optimize_predicate_expression says)
 * evaluate them beside the workspace filter, on other workspaces' rows, and an
 * expression that throws quotes those rows. The query settings of
 * query-settings.ts switch those optimizations off as well.
 */
export const BARRIER = "LIMIT 1000000000000000000";

/**
 * The documented views and what each reads; `where` is the scope filter over
 * the named table, closed by BARRIER. The filter names its columns with the
 * table's name, which no alias can shadow (aliases are plain identifiers, never
 * dotted).
 */
export const VIEWS: Record<string, (where: (table: string) => string) => string> = {
  key_verifications_v1: (where) =>
    `SELECT request_id, time, ${COLUMNS}, spent_credits, latency FROM key_verifications_raw WHERE ${where("key_verifications_raw")} ${BARRIER}`,
  key_verifications_per_minute_v1: (where) =>
    `SELECT toStartOfMinute(toDateTime(intDiv(t, 1000), 'UTC')) AS time, ${DIMENSIONS}, count() AS count, sum(spent_credits) AS spent_credits FROM (SELECT time AS t, ${COLUMNS}, spent_credits FROM key_verifications_raw WHERE ${where("key_verifications_raw")} ${BARRIER}) GROUP BY time, ${DIMENSIONS}`,
  key_verifications_per_hour_v1: (where) =>
    `SELECT toDateTime(intDiv(t, 1000), 'UTC') AS time, ${DIMENSIONS}, count, spent_credits FROM (SELECT time AS t, ${COLUMNS}, count, spent_credits FROM key_verifications_per_hour WHERE ${where("key_verifications_per_hour")} ${BARRIER})`,
  key_verifications_per_day_v1: (where) =>
    `SELECT toDate(toDateTime(intDiv(t, 1000), 'UTC')) AS time, ${DIMENSIONS}, count, spent_credits FROM (SELECT time AS t, ${COLUMNS}, count, spent_credits FROM key_verifications_per_day WHERE ${where("key_verifications_per_day")} ${BARRIER})`,
  key_verifications_per_month_v1: (where) =>
    `SELECT toStartOfMonth(toDateTime(intDiv(t, 1000), 'UTC')) AS time, ${DIMENSIONS}, sum(count) AS count, sum(spent_credits) AS spent_credits FROM (SELECT time AS t, ${COLUMNS}, count, spent_credits FROM key_verifications_per_day WHERE ${where("key_verifications_per_day")} ${BARRIER}) GROUP BY time, ${DIMENSIONS}`,
};

const RL_DIMENSIONS = "workspace_id, namespace_id, identifier";

/**
 * The rate-limit views, as Unkey names them: one row per check, and the
 * aggregates with `passed` and `total` counts per (time, namespace,
 * identifier). Minutes are counted from the raw table, hours and days from
 * their rollups (one row per passed flag, summed here), months from the daily one.
 */
export const RATELIMIT_VIEWS: Record<string, (where: (table: string) => string) => string> = {
  ratelimits_v1: (where) =>
    `SELECT request_id, time, ${RL_DIMENSIONS}, passed, \`limit\`, remaining, reset_at, override_id, cost AS tokens, latency FROM ratelimits_raw WHERE ${where("ratelimits_raw")} ${BARRIER}`,
  ratelimits_per_minute_v1: (where) =>
    `SELECT toStartOfMinute(toDateTime(intDiv(t, 1000), 'UTC')) AS time, ${RL_DIMENSIONS}, sum(p) AS passed, count() AS total FROM (SELECT time AS t, ${RL_DIMENSIONS}, passed AS p FROM ratelimits_raw WHERE ${where("ratelimits_raw")} ${BARRIER}) GROUP BY time, ${RL_DIMENSIONS}`,
  ratelimits_per_hour_v1: (where) => ratelimitRollup("toDateTime(intDiv(t, 1000), 'UTC')", "hour", where),
  ratelimits_per_day_v1: (where) =>
    ratelimitRollup("toDate(toDateTime(intDiv(t, 1000), 'UTC'))", "day", where),
  ratelimits_per_month_v1: (where) =>
    ratelimitRollup("toStartOfMonth(toDateTime(intDiv(t, 1000), 'UTC'))", "day", where),
};

function ratelimitRollup(time: string, table: "hour" | "day", where: (table: string) => string): string {
  const from = `ratelimits_per_${table}`;
  return `SELECT ${time} AS time, ${RL_DIMENSIONS}, sumIf(c, p = 1) AS passed, sum(c) AS total FROM (SELECT time AS t, ${RL_DIMENSIONS}, passed AS p, count AS c FROM ${from} WHERE ${where(from)} ${BARRIER}) GROUP BY time, ${RL_DIMENSIONS}`;
}

/** Each dataset's views and the column its caller's restriction (APIs or namespaces) filters. */
const DATASETS: Record<
  Dataset,
  {
    views: Record<string, (where: (table: string) => string) => string>;
    column: string;
    ids: (scope: RawQueryScope) => string[] | undefined;
  }
> = {
  verifications: { views: VIEWS, column: "api_id", ids: (s) => s.apiIds },
  ratelimits: { views: RATELIMIT_VIEWS, column: "namespace_id", ids: (s) => s.namespaceIds },
};

/**
 * Functions a query may call, by their lower-case spelling, rendered under the
 * canonical one: aggregates, conditionals, time, strings and arrays. Nothing
 * that reads a table, dictionary, file, URL, setting or the server's identity,
 * nothing that sleeps or throws on purpose, and nothing that builds a large
 * value from a small one (range, repeat, replicate).
 */
export const FUNCTIONS: ReadonlyMap<string, string> = new Map(
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
    .map((f) => [f.toLowerCase(), f]),
);

/** Types CAST may name. */
const TYPES = new Set(
  "String Int8 Int16 Int32 Int64 UInt8 UInt16 UInt32 UInt64 Float32 Float64 Date DateTime Nullable Array".split(
    " ",
  ),
);

const INTERVAL_UNITS = new Set(["SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"]);

const JOINS: Record<string, string> = {
  "": "INNER JOIN",
  INNER: "INNER JOIN",
  LEFT: "LEFT JOIN",
  "LEFT OUTER": "LEFT JOIN",
  RIGHT: "RIGHT JOIN",
  "RIGHT OUTER": "RIGHT JOIN",
  FULL: "FULL JOIN",
  "FULL OUTER": "FULL JOIN",
};

const refuse = (why: string) => domainError(ErrorReason.INVALID_ANALYTICS_QUERY, why);

const DOCS_HINT = "See docs/analytics-queries.md for what a query may use.";

/** Names of the query's CTEs in scope, each with the scope its body sees. */
interface Ctes {
  name: string;
  query: Query;
  outer: Ctes | undefined;
  next: Ctes | undefined;
}

class Renderer {
  private tables = 0;
  private readonly views: Record<string, (where: (table: string) => string) => string>;
  private readonly viewList: string;

  constructor(
    private readonly scope: RawQueryScope,
    private readonly dataset: Dataset,
  ) {
    this.views = DATASETS[dataset].views;
    this.viewList = Object.keys(this.views).join(", ");
  }

  private where = (table: string): string => {
    const column = (c: string) => `${table}.${c}`;
    const parts = [`${column("workspace_id")} = ${quote(this.scope.workspaceId)}`];
    const { column: restricted, ids: idsOf } = DATASETS[this.dataset];
    const ids = idsOf(this.scope);
    if (ids) {
      parts.push(ids.length === 0 ? "0" : `${column(restricted)} IN (${ids.map(quote).join(", ")})`);
    }
    return parts.join(" AND ");
  };

  query(q: Query, ctes: Ctes | undefined, depth: number): string {
    deeper(depth);
    switch (q.k) {
      case "select":
        return this.select(q.select, ctes, depth + 1);
      case "paren":
        return this.query(q.query, ctes, depth + 1);
      case "set": {
        let out = this.query(q.first, ctes, depth + 1);
        for (const part of q.rest) {
          if (part.op !== "UNION") {
            throw refuse(
              `${part.op} is not supported in analytics queries; use UNION ALL, or IN / NOT IN (SELECT ...).`,
            );
          }
          if (part.mode !== "ALL") {
            throw refuse(
              `UNION${part.mode ? ` ${part.mode}` : ""} is not supported: write UNION ALL (and SELECT DISTINCT over it if you need distinct rows).`,
            );
          }
          out += ` UNION ALL ${this.query(part.query, ctes, depth + 1)}`;
        }
        return out;
      }
    }
  }

  private select(s: Select, outer: Ctes | undefined, depth: number): string {
    deeper(depth);
    let ctes = outer;
    if (s.with) {
      if (s.with.recursive) throw refuse("WITH RECURSIVE is not allowed in analytics queries.");
      for (const item of s.with.items) {
        if (item.k === "alias") {
          throw refuse(
            `WITH <expression> AS ${item.alias.name} is not allowed (its name would reach into the views' filters); write the expression where it is used, or use WITH name AS (SELECT ...).`,
          );
        }
        const name = item.name.name;
        identifier(item.name);
        for (let c = ctes; c && c !== outer; c = c.next) {
          if (c.name === name) throw refuse(`The CTE '${name}' is defined twice.`);
        }
        // A CTE sees the CTEs defined before it, never itself: no recursion.
        ctes = { name, query: item.query, outer: ctes, next: ctes };
      }
    }
    if (s.prewhere) throw refuse("PREWHERE is not allowed in analytics queries; use WHERE.");
    if (s.groupModifier)
      throw refuse(`GROUP BY ... WITH ${s.groupModifier} is not allowed in analytics queries.`);
    if (s.window) throw refuse("WINDOW clauses and window functions are not allowed in analytics queries.");
    if (s.settings)
      throw refuse("SETTINGS is not allowed in analytics queries: limits are set by the service.");
    if (s.into) throw refuse("INTO OUTFILE is not allowed in analytics queries.");
    if (s.format)
      throw refuse(`FORMAT ${s.format} is not allowed in analytics queries: the answer is JSON rows.`);
    const e = (x: Expr) => this.expr(x, ctes, depth + 1);
    let out = `SELECT ${s.distinct ? "DISTINCT " : ""}${s.columns
      .map((c) => e(c.expr) + (c.alias ? ` AS ${identifier(c.alias)}` : ""))
      .join(", ")}`;
    if (s.from) out += ` FROM ${this.from(s.from, ctes, depth + 1)}`;
    if (s.where) out += ` WHERE ${e(s.where)}`;
    if (s.groupBy) out += ` GROUP BY ${s.groupBy.map(e).join(", ")}`;
    if (s.having) out += ` HAVING ${e(s.having)}`;
    if (s.orderBy) {
      out += ` ORDER BY ${s.orderBy
        .map((o) => `${e(o.expr)}${o.dir ? ` ${o.dir}` : ""}${o.nulls ? ` NULLS ${o.nulls}` : ""}`)
        .join(", ")}`;
    }
    if (s.limitBy) {
      out += ` LIMIT ${s.limitBy.offset ? `${count(s.limitBy.offset, "OFFSET")}, ` : ""}${count(s.limitBy.limit, "LIMIT")} BY ${s.limitBy.by.map(e).join(", ")}`;
    }
    if (s.limit) {
      out += ` LIMIT ${count(s.limit.limit, "LIMIT")}${s.limit.offset ? ` OFFSET ${count(s.limit.offset, "OFFSET")}` : ""}`;
    }
    return out;
  }

  private from(f: From, ctes: Ctes | undefined, depth: number): string {
    let out = this.table(f.first, ctes, depth);
    for (const j of f.joins) out += ` ${this.join(j, ctes, depth)}`;
    return out;
  }

  private join(j: Join, ctes: Ctes | undefined, depth: number): string {
    if (j.k === "comma") {
      throw refuse(
        "Comma joins (FROM a, b) are not allowed in analytics queries; write JOIN ... ON or USING.",
      );
    }
    if (j.k === "array") {
      throw refuse(
        `${j.left ? "LEFT " : ""}ARRAY JOIN is not allowed in analytics queries; use arrayJoin(tags) in the SELECT list.`,
      );
    }
    const words = j.words.join(" ");
    const kind = JOINS[words];
    if (kind === undefined) {
      throw refuse(
        `${words} JOIN is not allowed in analytics queries; use JOIN, INNER JOIN, LEFT JOIN, RIGHT JOIN or FULL JOIN with ON or USING.`,
      );
    }
    const table = this.table(j.table, ctes, depth);
    if (j.on) return `${kind} ${table} ON ${this.expr(j.on, ctes, depth + 1)}`;
    if (j.using) return `${kind} ${table} USING (${j.using.map(identifier).join(", ")})`;
    throw refuse(`${words || "A"} JOIN needs ON or USING in analytics queries.`);
  }

  private table(t: TableRef, ctes: Ctes | undefined, depth: number): string {
    deeper(depth);
    if (t.final) throw refuse("FINAL is not allowed in analytics queries.");
    if (t.sample) throw refuse("SAMPLE is not allowed in analytics queries.");
    const alias = t.alias ? identifier(t.alias) : undefined;
    const f = t.factor;
    if (f.k === "subquery") {
      return `(${this.query(f.query, ctes, depth + 1)})${alias ? ` AS ${alias}` : ""}`;
    }
    const written = f.name.map(shown).join(".");
    if (f.k === "function") {
      throw refuse(
        `Table functions are not allowed in analytics queries: '${written}(...)'. Read ${this.viewList}.`,
      );
    }
    if (f.name.length > 1) {
      throw refuse(
        `Database-qualified table names are not allowed in analytics queries: '${written}'. Read ${this.viewList} by name alone.`,
      );
    }
    const name = (f.name[0] as Name).name;
    const as = ` AS ${alias ?? identifier(f.name[0] as Name)}`;
    for (let c = ctes; c; c = c.next) {
      if (c.name === name) return `(${this.query(c.query, c.outer, depth + 1)})${as}`;
    }
    const view = Object.hasOwn(this.views, name) ? this.views[name] : undefined;
    if (!view) {
      const unquoted = name;
      const hint = Object.keys(this.views).find((v) => v.toLowerCase() === unquoted.toLowerCase());
      throw refuse(
        `'${written}' is not a table analytics queries may read${hint ? ` (table names are case-sensitive: did you mean ${hint}?)` : ""}; they read ${this.viewList}, or a CTE of the query.`,
      );
    }
    if (++this.tables > MAX_TABLE_REFERENCES) {
      throw refuse(`The query reads more than ${MAX_TABLE_REFERENCES} tables.`);
    }
    return `(${view(this.where)})${as}`;
  }

  private expr(x: Expr, ctes: Ctes | undefined, depth: number): string {
    deeper(depth);
    const e = (y: Expr) => this.expr(y, ctes, depth + 1);
    const q = (y: Query) => this.query(y, ctes, depth + 1);
    switch (x.k) {
      case "number":
        return x.text;
      case "string":
        return quote(x.value);
      case "null":
        return "NULL";
      case "bool":
        return x.value ? "1" : "0";
      case "param":
        throw refuse(`Query parameters are not supported in analytics queries: '${x.text}'.`);
      case "column":
        if (x.parts.length > 2) {
          throw refuse(
            `'${x.parts.map(shown).join(".")}' names a column of a database-qualified table, which analytics queries may not read.`,
          );
        }
        return x.parts.map(identifier).join(".");
      case "star":
        if (x.table && x.table.length > 1) {
          throw refuse(`'${x.table.map(shown).join(".")}.*' names a database-qualified table.`);
        }
        return x.table ? `${x.table.map(identifier).join(".")}.*` : "*";
      case "call": {
        const name = FUNCTIONS.get(x.name.toLowerCase());
        if (name === undefined) {
          throw refuse(`The function '${x.name}' is not allowed in analytics queries. ${DOCS_HINT}`);
        }
        if (x.over) throw refuse("Window functions (OVER) are not allowed in analytics queries.");
        const args = `(${x.distinct ? "DISTINCT " : ""}${x.args.map(e).join(", ")})`;
        return x.params ? `${name}(${x.params.map(e).join(", ")})${args}` : `${name}${args}`;
      }
      case "lambda":
        return `(${x.params.map(identifier).join(", ")}) -> ${e(x.body)}`;
      case "binary": {
        if (x.op === "||") return `concat(${e(x.left)}, ${e(x.right)})`;
        if (!CHAINED.has(x.op)) return `(${e(x.left)} ${x.op} ${e(x.right)})`;
        // The grammar builds `a OR b OR c` left-deep; a chain of one associative operator is one
        // level of nesting, not one per operand, so a long filter is not refused as deep.
        const operands: Expr[] = [];
        let left: Expr = x;
        while (left.k === "binary" && left.op === x.op) {
          operands.push(left.right);
          left = left.left;
        }
        operands.push(left);
        return `(${operands.reverse().map(e).join(` ${x.op} `)})`;
      }
      case "not":
        return `(NOT ${e(x.expr)})`;
      case "negate":
        return `(-${e(x.expr)})`;
      case "isNull":
        return `(${e(x.expr)} IS ${x.not ? "NOT " : ""}NULL)`;
      case "between": {
        const between = `(${e(x.expr)} BETWEEN ${e(x.low)} AND ${e(x.high)})`;
        return x.not ? `(NOT ${between})` : between;
      }
      case "like":
        return `(${e(x.expr)} ${x.not ? "NOT " : ""}${x.op} ${e(x.pattern)})`;
      case "in": {
        if (x.global) throw refuse("GLOBAL IN is not allowed in analytics queries; use IN.");
        const op = x.not ? "NOT IN" : "IN";
        if (x.query) return `(${e(x.expr)} ${op} (${q(x.query)}))`;
        const list = x.list ?? [];
        // ClickHouse reads `x IN t`, `x IN (t)` and `x IN (db.t)` as a table: a lone name is refused.
        if (x.table || (list.length === 1 && list[0]?.k === "column")) {
          const name = x.table ?? (list[0] as { parts: Name[] }).parts;
          throw refuse(
            `IN takes a parenthesised list of values or a subquery; '${name.map(shown).join(".")}' alone would name a table.`,
          );
        }
        return `(${e(x.expr)} ${op} (${list.map(e).join(", ")}))`;
      }
      case "exists":
        return `EXISTS (${q(x.query)})`;
      case "subquery":
        return `(${q(x.query)})`;
      case "case":
        return `CASE${x.operand ? ` ${e(x.operand)}` : ""}${x.whens
          .map((w) => ` WHEN ${e(w.when)} THEN ${e(w.then)}`)
          .join("")}${x.else ? ` ELSE ${e(x.else)}` : ""} END`;
      case "interval": {
        const unit = x.unit.replace(/S$/, "");
        if (!INTERVAL_UNITS.has(unit)) throw refuse(`'${x.unit}' is not an interval unit.`);
        return `INTERVAL ${e(x.expr)} ${unit}`;
      }
      case "cast":
        return `CAST(${e(x.expr)} AS ${typeName(x.type)})`;
      case "array":
        return `[${x.items.map(e).join(", ")}]`;
      case "tuple":
        return `(${x.items.map(e).join(", ")})`;
      case "index":
        return `arrayElement(${e(x.expr)}, ${e(x.index)})`;
    }
  }
}

/** Operators whose chains render flat: associative, so `a OR b OR c` means what `(a OR b) OR c` does. */
const CHAINED = new Set(["AND", "OR", "+", "*"]);

function deeper(depth: number): void {
  if (depth > MAX_DEPTH) throw refuse(`The query nests deeper than ${MAX_DEPTH} levels.`);
}

/** A name as the caller wrote it, for messages. */
const shown = (n: Name) => (n.quoted ? `\`${n.name}\`` : n.name);

/**
 * An identifier, backquoted: letters, digits and underscores only (after
 * unquoting), so no name carries a dot, a quote or a look-alike character.
 */
function identifier(n: Name): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(n.name)) {
    throw refuse(
      `Identifiers may hold only ASCII letters, digits and underscores: ${JSON.stringify(n.name.slice(0, 64))} is not allowed.`,
    );
  }
  return `\`${n.name}\``;
}

/** A LIMIT or OFFSET: a plain non-negative integer. */
function count(x: Expr, clause: string): string {
  if (x.k !== "number" || !/^\d{1,9}$/.test(x.text)) {
    throw refuse(`${clause} takes a whole number below 1000000000.`);
  }
  return String(Number(x.text));
}

function typeName(t: TypeName): string {
  if (!TYPES.has(t.name)) throw refuse(`CAST to '${t.name}' is not allowed in analytics queries.`);
  if (t.name === "Nullable" || t.name === "Array") {
    if (t.args.length !== 1) throw refuse(`${t.name} takes one type.`);
    return `${t.name}(${typeName(t.args[0] as TypeName)})`;
  }
  if (t.args.length > 0) throw refuse(`The type ${t.name} takes no arguments here.`);
  return t.name;
}

/**
 * The deepest nesting of brackets and the number of tokens, outside strings and
 * quoted names (a rough count: it only bounds the parser's work).
 */
function shape(sql: string): { depth: number; tokens: number } {
  let depth = 0;
  let max = 0;
  let tokens = 0;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i] as string;
    if (c === "'" || c === '"' || c === "`") {
      for (i++; i < sql.length && sql[i] !== c; i++) if (sql[i] === "\\") i++;
      tokens++;
    } else if (/\w/.test(c)) {
      while (i + 1 < sql.length && /\w/.test(sql[i + 1] as string)) i++;
      tokens++;
    } else if (!/\s/.test(c)) {
      tokens++;
      if (c === "(" || c === "[") max = Math.max(max, ++depth);
      else if (c === ")" || c === "]") depth--;
    }
  }
  return { depth: max, tokens };
}

/**
 * Parses, checks and renders a raw query for `scope`, or throws
 * INVALID_ANALYTICS_QUERY naming what is not allowed. The answer is wrapped in
 * a LIMIT one past `maxRows`, so a longer answer can be told from a full one.
 */
export function checkRawQuery(
  sql: string,
  scope: RawQueryScope,
  maxRows = 10_000,
  dataset: Dataset = "verifications",
): CheckedRawQuery {
  if (sql.trim().length === 0) throw refuse("The query is empty.");
  if (sql.length > MAX_QUERY_LENGTH) throw refuse(`The query is longer than ${MAX_QUERY_LENGTH} characters.`);
  const { depth, tokens } = shape(sql);
  if (depth > MAX_DEPTH) throw refuse(`The query nests deeper than ${MAX_DEPTH} levels.`);
  if (tokens > MAX_TOKENS) throw refuse(`The query has more than ${MAX_TOKENS} words, numbers and symbols.`);
  let parsed: ReturnType<typeof parseQuery>;
  try {
    parsed = parseQuery(sql);
  } catch (err) {
    if (!isSyntaxProblem(err)) throw err;
    const near = err.near === "" ? "the end of the query" : `'${err.near}'`;
    throw refuse(
      `The query is not in the supported SQL at line ${err.line}, column ${err.column}, near ${near}. Analytics queries are one SELECT over ${Object.keys(DATASETS[dataset].views).join(", ")}. ${DOCS_HINT}`,
    );
  }
  if (parsed.more.trim() !== "") throw refuse("Only one statement is allowed in an analytics query.");
  const body = new Renderer(scope, dataset).query(parsed.query, undefined, 0);
  return { sql: `SELECT * FROM (${body}) LIMIT ${maxRows + 1}`, maxRows };
}
