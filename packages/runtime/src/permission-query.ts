import { domainError, ErrorReason } from "./errors.ts";

/**
 * The permission query of keys.verifyKey (docs/api.md):
 *
 *   expr    := and (OR and)*
 *   and     := primary (AND primary)*
 *   primary := PERMISSION | "(" expr ")"
 *
 * AND binds tighter than OR; operators are case-insensitive; a permission is a
 * run of letters, digits and `. _ - * : /`; whitespace separates tokens; a
 * query has at most 1000 characters. Positions in error messages count
 * characters from 0.
 *
 * Evaluation differs from Unkey on purpose, as docs/api.md says: a
 * HELD wildcard grants what it covers (documents.* grants documents.read and
 * documents.write.own). A `*` in the QUERY is an ordinary character, so asking
 * for documents.* is satisfied only by holding documents.* (or a wider
 * wildcard such as *).
 */
export type PermissionQuery =
  | { readonly type: "permission"; readonly permission: string }
  | { readonly type: "and"; readonly operands: readonly PermissionQuery[] }
  | { readonly type: "or"; readonly operands: readonly PermissionQuery[] };

export const MAX_PERMISSION_QUERY_LENGTH = 1000;

type TokenKind = "permission" | "and" | "or" | "open" | "close";
interface Token {
  kind: TokenKind;
  text: string;
  at: number;
}

const PERMISSION_CHAR = /[A-Za-z0-9._\-*:/]/;
const WHITESPACE = /\s/;

const syntaxError = (message: string) => domainError(ErrorReason.PERMISSIONS_QUERY_SYNTAX, message);

function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < query.length) {
    const c = query[i]!;
    if (WHITESPACE.test(c)) {
      i++;
    } else if (c === "(" || c === ")") {
      tokens.push({ kind: c === "(" ? "open" : "close", text: c, at: i });
      i++;
    } else if (PERMISSION_CHAR.test(c)) {
      const start = i;
      while (i < query.length && PERMISSION_CHAR.test(query[i]!)) i++;
      const text = query.slice(start, i);
      const word = text.toLowerCase();
      tokens.push({ kind: word === "and" ? "and" : word === "or" ? "or" : "permission", text, at: start });
    } else {
      throw syntaxError(
        `Invalid character '${c}' found in query at position ${i}: a permission may hold letters, digits and . _ - * : /`,
      );
    }
  }
  return tokens;
}

/** Parses a permission query, or throws PERMISSIONS_QUERY_SYNTAX saying where it went wrong. */
export function parsePermissionQuery(query: string): PermissionQuery {
  if (query.length > MAX_PERMISSION_QUERY_LENGTH) {
    throw syntaxError(
      `The permission query is ${query.length} characters long, too long at position ${MAX_PERMISSION_QUERY_LENGTH}: at most ${MAX_PERMISSION_QUERY_LENGTH} characters are allowed.`,
    );
  }
  const tokens = tokenize(query);
  if (tokens.length === 0)
    throw syntaxError("The permission query is empty at position 0: name a permission.");
  let pos = 0;

  const describe = (t: Token | undefined) =>
    t ? `'${t.text}' at position ${t.at}` : `the end at position ${query.length}`;

  const expr = (): PermissionQuery => {
    const operands = [and()];
    while (tokens[pos]?.kind === "or") {
      pos++;
      operands.push(and());
    }
    return operands.length === 1 ? operands[0]! : { type: "or", operands };
  };

  const and = (): PermissionQuery => {
    const operands = [primary()];
    while (tokens[pos]?.kind === "and") {
      pos++;
      operands.push(primary());
    }
    return operands.length === 1 ? operands[0]! : { type: "and", operands };
  };

  const primary = (): PermissionQuery => {
    const token = tokens[pos];
    if (token?.kind === "permission") {
      pos++;
      return { type: "permission", permission: token.text };
    }
    if (token?.kind === "open") {
      if (tokens[pos + 1]?.kind === "close")
        throw syntaxError(`Empty parentheses found at position ${token.at}.`);
      pos++;
      const inner = expr();
      const closing = tokens[pos];
      if (closing?.kind !== "close") {
        throw syntaxError(
          `The parenthesis opened at position ${token.at} is not closed: expected ')' but found ${describe(closing)}.`,
        );
      }
      pos++;
      return inner;
    }
    throw syntaxError(`Expected a permission or '(' but found ${describe(token)}.`);
  };

  const ast = expr();
  const rest = tokens[pos];
  if (rest) {
    throw syntaxError(
      rest.kind === "close"
        ? `Unmatched ')' at position ${rest.at}.`
        : `Expected AND, OR or the end of the query but found ${describe(rest)}.`,
    );
  }
  return ast;
}

/**
 * Whether the held permissions satisfy the query. A held permission grants
 * itself; a held `*` segment matches any one segment, and a trailing `*`
 * segment any one or more, so documents.* grants documents.read and
 * documents.write.own but not documents itself; a held `*` grants everything.
 */
export function evaluatePermissionQuery(
  query: PermissionQuery,
  held: ReadonlySet<string> | readonly string[],
): boolean {
  return evaluate(query, heldPermissions(held));
}

interface Held {
  exact: ReadonlySet<string>;
  wildcards: readonly string[][];
}

function heldPermissions(held: ReadonlySet<string> | readonly string[]): Held {
  const exact = held instanceof Set ? (held as ReadonlySet<string>) : new Set(held);
  const wildcards: string[][] = [];
  for (const h of exact) if (h.includes("*")) wildcards.push(h.split("."));
  return { exact, wildcards };
}

function evaluate(query: PermissionQuery, held: Held): boolean {
  switch (query.type) {
    case "permission":
      return isGranted(query.permission, held);
    case "and":
      return query.operands.every((q) => evaluate(q, held));
    case "or":
      return query.operands.some((q) => evaluate(q, held));
    default: {
      const never: never = query;
      throw new Error(`unknown permission query node ${JSON.stringify(never)}`);
    }
  }
}

function isGranted(wanted: string, held: Held): boolean {
  if (held.exact.has(wanted)) return true;
  if (held.wildcards.length === 0) return false;
  const ws = wanted.split(".");
  return held.wildcards.some((hs) => covers(hs, ws));
}

function covers(held: readonly string[], wanted: readonly string[]): boolean {
  const last = held.length - 1;
  if (held[last] === "*" ? wanted.length < held.length : wanted.length !== held.length) return false;
  for (let i = 0; i < held.length; i++) {
    if (held[i] !== "*" && held[i] !== wanted[i]) return false;
  }
  return true;
}
