/**
 * The tree the raw-query grammar (grammar.ts) builds. It holds somewhat more
 * than analytics queries may use (qualified table names, table functions,
 * every join spelling, FINAL, SETTINGS, FORMAT, ...): those are parsed so that
 * raw-query.ts can refuse them by name. Only raw-query.ts decides what runs.
 */

export interface Name {
  /** The identifier as ClickHouse reads it: quotes removed, escapes resolved, case kept. */
  name: string;
  quoted: boolean;
}

export type SetOp = { op: "UNION" | "INTERSECT" | "EXCEPT"; mode: "ALL" | "DISTINCT" | ""; query: Query };

/** A SELECT, a parenthesised query, or several joined by UNION / INTERSECT / EXCEPT. */
export type Query =
  | { k: "select"; select: Select }
  | { k: "paren"; query: Query }
  | { k: "set"; first: Query; rest: SetOp[] };

export type WithItem = { k: "cte"; name: Name; query: Query } | { k: "alias"; expr: Expr; alias: Name };

export interface SelectItem {
  expr: Expr;
  alias?: Name;
}

export interface OrderItem {
  expr: Expr;
  dir?: "ASC" | "DESC";
  nulls?: "FIRST" | "LAST";
}

export interface Select {
  with?: { recursive: boolean; items: WithItem[] };
  distinct: boolean;
  columns: SelectItem[];
  from?: From;
  prewhere?: Expr;
  where?: Expr;
  groupBy?: Expr[];
  groupModifier?: string;
  having?: Expr;
  orderBy?: OrderItem[];
  limitBy?: { limit: Expr; offset?: Expr; by: Expr[] };
  limit?: { limit: Expr; offset?: Expr };
  settings?: boolean;
  into?: boolean;
  format?: string;
  window?: boolean;
}

export interface From {
  first: TableRef;
  joins: Join[];
}

export type TableFactor =
  | { k: "table"; name: Name[] }
  | { k: "function"; name: Name[]; args: Expr[] }
  | { k: "subquery"; query: Query };

export interface TableRef {
  factor: TableFactor;
  alias?: Name;
  final: boolean;
  sample: boolean;
}

export type Join =
  | { k: "comma"; table: TableRef }
  | { k: "array"; left: boolean }
  | { k: "join"; words: string[]; table: TableRef; on?: Expr; using?: Name[] };

export type Expr =
  | { k: "number"; text: string }
  | { k: "string"; value: string }
  | { k: "null" }
  | { k: "bool"; value: boolean }
  | { k: "param"; text: string }
  | { k: "column"; parts: Name[] }
  | { k: "star"; table?: Name[] }
  | {
      k: "call";
      name: string;
      distinct: boolean;
      args: Expr[];
      /** A parametric aggregate's parameters: quantile(0.9)(x) has params [0.9] and args [x]. */
      params?: Expr[];
      over: boolean;
    }
  | { k: "lambda"; params: Name[]; body: Expr }
  | { k: "binary"; op: string; left: Expr; right: Expr }
  | { k: "not"; expr: Expr }
  | { k: "negate"; expr: Expr }
  | { k: "isNull"; expr: Expr; not: boolean }
  | { k: "between"; expr: Expr; low: Expr; high: Expr; not: boolean }
  | { k: "like"; expr: Expr; pattern: Expr; op: "LIKE" | "ILIKE"; not: boolean }
  | { k: "in"; expr: Expr; not: boolean; global: boolean; list?: Expr[]; query?: Query; table?: Name[] }
  | { k: "exists"; query: Query }
  | { k: "subquery"; query: Query }
  | { k: "case"; operand?: Expr; whens: { when: Expr; then: Expr }[]; else?: Expr }
  | { k: "interval"; expr: Expr; unit: string }
  | { k: "cast"; expr: Expr; type: TypeName }
  | { k: "array"; items: Expr[] }
  | { k: "tuple"; items: Expr[] }
  | { k: "index"; expr: Expr; index: Expr };

export interface TypeName {
  name: string;
  args: TypeName[];
}
