import peggy from "peggy";
import type { Query } from "./ast.ts";

/**
 * The grammar of raw analytics queries: the SELECT subset of ClickHouse's SQL
 * that analytics queries may use, plus the spellings raw-query.ts must refuse by
 * name (qualified and table-function FROMs, every join kind, FINAL, SAMPLE,
 * PREWHERE, SETTINGS, FORMAT, INTO OUTFILE, WITH TOTALS, window functions,
 * query parameters). Anything else does not parse. Keywords are
 * case-insensitive, as in ClickHouse; identifiers keep their case and come out
 * of quotes (`x`, "x") with escapes resolved, so raw-query.ts compares the names
 * ClickHouse would read. `--` and `/* *\/` comments are whitespace (they never
 * reach ClickHouse: the SQL that runs is rendered from the tree).
 */
const grammar = String.raw`
{{
  const node = (k, fields) => ({ k, ...fields });
  // Words that end an expression or a table reference, so never a bare alias or column name.
  const KEYWORDS = new Set(
    ("SELECT FROM WHERE PREWHERE GROUP BY HAVING ORDER LIMIT OFFSET UNION INTERSECT EXCEPT ALL DISTINCT JOIN GLOBAL " +
      "LOCAL ANY ASOF SEMI ANTI INNER LEFT RIGHT FULL OUTER CROSS PASTE ARRAY ON USING AS AND OR NOT IN IS NULL " +
      "LIKE ILIKE BETWEEN CASE WHEN THEN ELSE END WITH ASC DESC NULLS INTERVAL FINAL SAMPLE SETTINGS FORMAT INTO " +
      "WINDOW OVER EXISTS CAST TRUE FALSE").split(" "),
  );
  const binaryChain = (head, tail) =>
    tail.reduce((left, [op, right]) => ({ k: "binary", op, left, right }), head);
  const unescape = (text) =>
    text.replace(/\\(x[0-9a-fA-F]{2}|.)|''|\x60\x60|""/gs, (m, e) => {
      if (e === undefined) return m[0];
      if (e[0] === "x" && e.length === 3) return String.fromCharCode(parseInt(e.slice(1), 16));
      return { b: "\b", f: "\f", r: "\r", n: "\n", t: "\t", 0: "\0", a: "\x07", v: "\v" }[e] ?? e;
    });
}}

Start
  = _ query:SetQuery _ tail:Tail { return { query, more: tail }; }

Tail
  = (";" _)+ more:$(.*) { return more; }
  / !. { return ""; }

SetQuery
  = first:QueryTerm rest:(_ op:SetOp _ query:QueryTerm { return { ...op, query }; })*
    { return rest.length === 0 ? first : node("set", { first, rest }); }

SetOp
  = op:(UNION / INTERSECT / EXCEPT) mode:(_ m:(ALL / DISTINCT) { return m; })?
    { return { op, mode: mode ?? "" }; }

QueryTerm
  = select:Select { return node("select", { select }); }
  / "(" _ query:SetQuery _ ")" { return node("paren", { query }); }

Select
  = w:(WITH _ r:(RECURSIVE _)? items:WithList _ { return { recursive: r !== null, items }; })?
    SELECT _ distinct:(DISTINCT _)? columns:SelectList
    from:(_ FROM _ f:From { return f; })?
    prewhere:(_ PREWHERE _ e:Expr { return e; })?
    where:(_ WHERE _ e:Expr { return e; })?
    groupBy:(_ GROUP _ BY _ l:ExprList { return l; })?
    groupModifier:(_ WITH _ m:(TOTALS / ROLLUP / CUBE) { return m; })?
    having:(_ HAVING _ e:Expr { return e; })?
    window:(_ WINDOW _ Ident _ AS _ Balanced)?
    orderBy:(_ ORDER _ BY _ l:OrderList { return l; })?
    limitBy:(_ LIMIT _ l:Expr offset:(_ OFFSET _ o:Expr { return o; })? _ BY _ by:ExprList { return { limit: l, offset: offset ?? undefined, by }; })?
    limit:(_ l:Limit { return l; })?
    settings:(_ SETTINGS _ SettingList)?
    into:(_ INTO _ OUTFILE _ String)?
    format:(_ FORMAT _ f:BareWord { return f; })?
    {
      return {
        with: w ?? undefined, distinct: distinct !== null, columns, from: from ?? undefined,
        prewhere: prewhere ?? undefined, where: where ?? undefined, groupBy: groupBy ?? undefined,
        groupModifier: groupModifier ?? undefined, having: having ?? undefined, window: window !== null,
        orderBy: orderBy ?? undefined, limitBy: limitBy ?? undefined, limit: limit ?? undefined,
        settings: settings !== null, into: into !== null, format: format ?? undefined,
      };
    }

WithList
  = head:WithItem tail:(_ "," _ i:WithItem { return i; })* { return [head, ...tail]; }

WithItem
  = name:Ident _ AS _ "(" _ query:SetQuery _ ")" { return node("cte", { name, query }); }
  / expr:Expr _ AS _ alias:AliasName { return node("alias", { expr, alias }); }

SelectList
  = head:SelectItem tail:(_ "," _ i:SelectItem { return i; })* { return [head, ...tail]; }

SelectItem
  = expr:Expr alias:(_ AS _ a:AliasName { return a; } / _ a:BareIdent { return a; })?
    { return alias === null ? { expr } : { expr, alias }; }

Limit
  = LIMIT _ first:Expr _ "," _ second:Expr { return { limit: second, offset: first }; }
  / LIMIT _ limit:Expr offset:(_ OFFSET _ o:Expr { return o; })? { return offset === null ? { limit } : { limit, offset }; }

SettingList
  = BareWord _ "=" _ Literal (_ "," _ BareWord _ "=" _ Literal)*

OrderList
  = head:OrderItem tail:(_ "," _ i:OrderItem { return i; })* { return [head, ...tail]; }

OrderItem
  = expr:Expr dir:(_ d:(ASC / DESC) { return d; })? nulls:(_ NULLS _ n:(FIRST / LAST) { return n; })?
    { return { expr, ...(dir ? { dir } : {}), ...(nulls ? { nulls } : {}) }; }

From
  = first:TableRef joins:(_ j:Join { return j; })* { return { first, joins }; }

TableRef
  = factor:TableFactor
    alias:(_ AS _ a:AliasName { return a; } / _ a:BareIdent { return a; })?
    final:(_ FINAL)?
    sample:(_ SAMPLE _ Expr (_ OFFSET _ Expr)?)?
    { return { factor, ...(alias ? { alias } : {}), final: final !== null, sample: sample !== null }; }

TableFactor
  = "(" _ query:SetQuery _ ")" { return node("subquery", { query }); }
  / name:QualifiedName _ "(" _ args:ExprList? _ ")" { return node("function", { name, args: args ?? [] }); }
  / name:QualifiedName { return node("table", { name }); }

Join
  = "," _ table:TableRef { return node("comma", { table }); }
  / left:(LEFT _)? ARRAY _ JOIN _ SelectList { return node("array", { left: left !== null }); }
  / words:(w:JoinWord _ { return w; })* JOIN _ table:TableRef
    cond:(_ ON _ on:Expr { return { on }; }
        / _ USING _ "(" _ using:IdentList _ ")" { return { using }; }
        / _ USING _ using:IdentList { return { using }; })?
    { return node("join", { words, table, ...(cond ?? {}) }); }

JoinWord
  = GLOBAL / LOCAL / ANY / ALL / ASOF / SEMI / ANTI / INNER / LEFT / RIGHT / FULL / OUTER / CROSS / PASTE

IdentList
  = head:Ident tail:(_ "," _ i:Ident { return i; })* { return [head, ...tail]; }

ExprList
  = head:Expr tail:(_ "," _ e:Expr { return e; })* { return [head, ...tail]; }

Expr
  = Lambda
  / Or

Lambda
  = params:LambdaParams _ "->" _ body:Expr { return node("lambda", { params, body }); }

LambdaParams
  = p:BareIdent { return [p]; }
  / "(" _ l:IdentList _ ")" { return l; }

Or
  = head:And tail:(_ OR _ e:And { return ["OR", e]; })* { return binaryChain(head, tail); }

And
  = head:Not tail:(_ AND _ e:Not { return ["AND", e]; })* { return binaryChain(head, tail); }

Not
  = NOT _ expr:Not { return node("not", { expr }); }
  / Comparison

Comparison
  = expr:Concat rest:(_ r:ComparisonRest { return r; })?
    { return rest === null ? expr : rest(expr); }

ComparisonRest
  = IS _ not:(NOT _)? NULL { return (expr) => node("isNull", { expr, not: not !== null }); }
  / not:(NOT _)? BETWEEN _ low:Concat _ AND _ high:Concat
    { return (expr) => node("between", { expr, low, high, not: not !== null }); }
  / not:(NOT _)? op:(LIKE / ILIKE) _ pattern:Concat
    { return (expr) => node("like", { expr, pattern, op, not: not !== null }); }
  / global:(GLOBAL _)? not:(NOT _)? IN _ rhs:InRight
    { return (expr) => node("in", { expr, not: not !== null, global: global !== null, ...rhs }); }
  / op:CompareOp _ right:Concat { return (left) => node("binary", { op, left, right }); }

InRight
  = "(" _ query:SetQuery _ ")" { return { query }; }
  / "(" _ list:ExprList _ ")" { return { list }; }
  / table:QualifiedName { return { table }; }

CompareOp
  = "==" { return "="; } / "=" { return "="; } / "!=" { return "!="; } / "<>" { return "!="; }
  / "<=" { return "<="; } / ">=" { return ">="; } / "<" { return "<"; } / ">" { return ">"; }

Concat
  = head:Additive tail:(_ "||" _ e:Additive { return ["||", e]; })* { return binaryChain(head, tail); }

Additive
  = head:Multiplicative tail:(_ op:$("+" / "-" !">") _ e:Multiplicative { return [op, e]; })*
    { return binaryChain(head, tail); }

Multiplicative
  = head:Unary tail:(_ op:$("*" / "/" / "%") _ e:Unary { return [op, e]; })*
    { return binaryChain(head, tail); }

Unary
  = "-" !">" _ expr:Unary { return node("negate", { expr }); }
  / Postfix

Postfix
  = expr:Primary indexes:(_ "[" _ i:Expr _ "]" { return i; })*
    { return indexes.reduce((e, index) => node("index", { expr: e, index }), expr); }

Primary
  = "(" _ query:SetQuery _ ")" { return node("subquery", { query }); }
  / "(" _ head:Expr tail:(_ "," _ e:Expr { return e; })* _ ")"
    { return tail.length === 0 ? head : node("tuple", { items: [head, ...tail] }); }
  / "[" _ items:ExprList? _ "]" { return node("array", { items: items ?? [] }); }
  / Case
  / Interval
  / Cast
  / EXISTS _ "(" _ query:SetQuery _ ")" { return node("exists", { query }); }
  / Number
  / s:String { return node("string", { value: s }); }
  / NULL { return node("null", {}); }
  / TRUE { return node("bool", { value: true }); }
  / FALSE { return node("bool", { value: false }); }
  / Parameter
  / Call
  / "*" { return node("star", {}); }
  / parts:QualifiedName star:("." _ "*")?
    { return star ? node("star", { table: parts }) : node("column", { parts }); }

Case
  = CASE operand:(_ !WHEN e:Expr { return e; })?
    whens:(_ WHEN _ when:Expr _ THEN _ then:Expr { return { when, then }; })+
    otherwise:(_ ELSE _ e:Expr { return e; })? _ END
    { return node("case", { ...(operand ? { operand } : {}), whens, ...(otherwise ? { else: otherwise } : {}) }); }

Interval
  = INTERVAL _ expr:Concat _ unit:BareWord { return node("interval", { expr, unit: unit.toUpperCase() }); }

Cast
  = CAST _ "(" _ expr:Expr _ AS _ type:TypeName _ ")" { return node("cast", { expr, type }); }

TypeName
  = name:BareWord args:(_ "(" _ h:TypeArg t:(_ "," _ a:TypeArg { return a; })* _ ")" { return [h, ...t]; })?
    { return { name, args: args ?? [] }; }

TypeArg
  = TypeName
  / s:String { return { name: "'" + s + "'", args: [] }; }
  / n:Number { return { name: n.text, args: [] }; }

Call
  = name:BareWord _ "(" _ distinct:(DISTINCT _)? args:ExprList? _ ")"
    more:(_ "(" _ a:ExprList? _ ")" { return a ?? []; })?
    over:(_ OVER _ (Balanced / Ident))?
    {
      return more === null
        ? node("call", { name, distinct: distinct !== null, args: args ?? [], over: over !== null })
        : node("call", { name, distinct: distinct !== null, params: args ?? [], args: more, over: over !== null });
    }

Parameter
  = "?" { return node("param", { text: "?" }); }
  / "{" [^}]* "}" { return node("param", { text: text() }); }

Balanced
  = "(" ([^()'] / String / Balanced)* ")"

QualifiedName
  = head:Ident tail:("." i:Ident { return i; })* { return [head, ...tail]; }

Ident
  = QuotedIdent
  / BareIdent

AliasName
  = QuotedIdent
  / name:BareWord { return { name, quoted: false }; }

BareIdent
  = !Keyword name:BareWord { return { name, quoted: false }; }

BareWord
  = $([A-Za-z_] [A-Za-z0-9_]*)

QuotedIdent
  = "\x60" chars:$(("\x60\x60" / "\\" . / [^\x60\\])*) "\x60" { return { name: unescape(chars), quoted: true }; }
  / '"' chars:$(('""' / "\\" . / [^"\\])*) '"' { return { name: unescape(chars), quoted: true }; }

String
  = "'" chars:$(("''" / "\\" . / [^'\\])*) "'" { return unescape(chars); }

Literal
  = Number / String / BareWord

Number
  = text:$("0" [xX] [0-9a-fA-F]+ / ([0-9]+ ("." [0-9]*)? / "." [0-9]+) ([eE] [+-]? [0-9]+)?) !IdentChar
    { return node("number", { text }); }

IdentChar
  = [A-Za-z0-9_]

_
  = ([ \t\n\r\f\v] / "--" [^\n]* / "/*" (!"*/" .)* "*/")*

Keyword
  = w:BareWord &{ return KEYWORDS.has(w.toUpperCase()); }

SELECT = "select"i !IdentChar { return "SELECT"; }
FROM = "from"i !IdentChar { return "FROM"; }
WHERE = "where"i !IdentChar { return "WHERE"; }
PREWHERE = "prewhere"i !IdentChar { return "PREWHERE"; }
GROUP = "group"i !IdentChar { return "GROUP"; }
BY = "by"i !IdentChar { return "BY"; }
HAVING = "having"i !IdentChar { return "HAVING"; }
ORDER = "order"i !IdentChar { return "ORDER"; }
LIMIT = "limit"i !IdentChar { return "LIMIT"; }
OFFSET = "offset"i !IdentChar { return "OFFSET"; }
UNION = "union"i !IdentChar { return "UNION"; }
INTERSECT = "intersect"i !IdentChar { return "INTERSECT"; }
EXCEPT = "except"i !IdentChar { return "EXCEPT"; }
ALL = "all"i !IdentChar { return "ALL"; }
DISTINCT = "distinct"i !IdentChar { return "DISTINCT"; }
JOIN = "join"i !IdentChar { return "JOIN"; }
GLOBAL = "global"i !IdentChar { return "GLOBAL"; }
LOCAL = "local"i !IdentChar { return "LOCAL"; }
ANY = "any"i !IdentChar { return "ANY"; }
ASOF = "asof"i !IdentChar { return "ASOF"; }
SEMI = "semi"i !IdentChar { return "SEMI"; }
ANTI = "anti"i !IdentChar { return "ANTI"; }
INNER = "inner"i !IdentChar { return "INNER"; }
LEFT = "left"i !IdentChar { return "LEFT"; }
RIGHT = "right"i !IdentChar { return "RIGHT"; }
FULL = "full"i !IdentChar { return "FULL"; }
OUTER = "outer"i !IdentChar { return "OUTER"; }
CROSS = "cross"i !IdentChar { return "CROSS"; }
PASTE = "paste"i !IdentChar { return "PASTE"; }
ARRAY = "array"i !IdentChar { return "ARRAY"; }
ON = "on"i !IdentChar { return "ON"; }
USING = "using"i !IdentChar { return "USING"; }
AS = "as"i !IdentChar { return "AS"; }
AND = "and"i !IdentChar { return "AND"; }
OR = "or"i !IdentChar { return "OR"; }
NOT = "not"i !IdentChar { return "NOT"; }
IN = "in"i !IdentChar { return "IN"; }
IS = "is"i !IdentChar { return "IS"; }
NULL = "null"i !IdentChar { return "NULL"; }
LIKE = "like"i !IdentChar { return "LIKE"; }
ILIKE = "ilike"i !IdentChar { return "ILIKE"; }
BETWEEN = "between"i !IdentChar { return "BETWEEN"; }
CASE = "case"i !IdentChar { return "CASE"; }
WHEN = "when"i !IdentChar { return "WHEN"; }
THEN = "then"i !IdentChar { return "THEN"; }
ELSE = "else"i !IdentChar { return "ELSE"; }
END = "end"i !IdentChar { return "END"; }
WITH = "with"i !IdentChar { return "WITH"; }
ASC = "asc"i !IdentChar { return "ASC"; }
DESC = "desc"i !IdentChar { return "DESC"; }
NULLS = "nulls"i !IdentChar { return "NULLS"; }
FIRST = "first"i !IdentChar { return "FIRST"; }
LAST = "last"i !IdentChar { return "LAST"; }
INTERVAL = "interval"i !IdentChar { return "INTERVAL"; }
FINAL = "final"i !IdentChar { return "FINAL"; }
SAMPLE = "sample"i !IdentChar { return "SAMPLE"; }
SETTINGS = "settings"i !IdentChar { return "SETTINGS"; }
FORMAT = "format"i !IdentChar { return "FORMAT"; }
INTO = "into"i !IdentChar { return "INTO"; }
OUTFILE = "outfile"i !IdentChar { return "OUTFILE"; }
TOTALS = "totals"i !IdentChar { return "TOTALS"; }
ROLLUP = "rollup"i !IdentChar { return "ROLLUP"; }
CUBE = "cube"i !IdentChar { return "CUBE"; }
WINDOW = "window"i !IdentChar { return "WINDOW"; }
OVER = "over"i !IdentChar { return "OVER"; }
EXISTS = "exists"i !IdentChar { return "EXISTS"; }
CAST = "cast"i !IdentChar { return "CAST"; }
TRUE = "true"i !IdentChar { return "TRUE"; }
FALSE = "false"i !IdentChar { return "FALSE"; }
RECURSIVE = "recursive"i !IdentChar { return "RECURSIVE"; }
`;

export interface Parsed {
  query: Query;
  /** What follows a first `;`: empty unless the text holds more than one statement. */
  more: string;
}

export interface SyntaxProblem {
  line: number;
  column: number;
  /** The text at the failure, as far as the end of its line (at most 30 characters). */
  near: string;
  expected: string[];
}

let parser: peggy.Parser | undefined;

/**
 * Parses one raw query. Throws a SyntaxProblem when the text is outside the
 * grammar. The parser is generated on first use (tens of ms). No rule needs
 * more than one try per nesting level, so without peggy's result cache
 * (measured slower here) nesting costs at most its square: the caller bounds
 * nesting and length first (raw-query.ts).
 */
export function parseQuery(text: string): Parsed {
  parser ??= peggy.generate(grammar);
  try {
    return parser.parse(text) as Parsed;
  } catch (err) {
    if (err instanceof (parser as unknown as { SyntaxError: typeof peggy.parser.SyntaxError }).SyntaxError) {
      const { start } = err.location;
      const rest = text.slice(start.offset).split("\n")[0] ?? "";
      const expected = [
        ...new Set(
          (err.expected ?? [])
            .map((e) => (e.type === "literal" ? e.text : e.type === "other" ? e.description : ""))
            .filter((e) => e !== ""),
        ),
      ];
      throw { line: start.line, column: start.column, near: rest.slice(0, 30), expected } as SyntaxProblem;
    }
    throw err;
  }
}

export const isSyntaxProblem = (err: unknown): err is SyntaxProblem =>
  typeof err === "object" && err !== null && "line" in err && "near" in err;
