import { domainError, ErrorReason } from "@latchkey/runtime";

/**
 * The permission query of keys.verifyKey, as the reference parses it:
 *   expression := and (OR and)*      and := primary (AND primary)*
 *   primary    := PERMISSION | "(" expression ")"
 * AND binds tighter than OR; operators are case-insensitive; a permission
 * matches by exact string, so "*" in a query is a literal character.
 */
export type PermissionQuery = { all: PermissionQuery[] } | { any: PermissionQuery[] } | string;

type Token = { kind: "perm" | "and" | "or" | "open" | "close"; text: string; at: number };

const PERMISSION_CHAR = /[A-Za-z0-9._\-*:/]/;

const syntaxError = (message: string) => domainError(ErrorReason.PERMISSIONS_QUERY_SYNTAX, message);

function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < query.length) {
    const c = query[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
    } else if (c === "(" || c === ")") {
      tokens.push({ kind: c === "(" ? "open" : "close", text: c, at: i });
      i++;
    } else if (PERMISSION_CHAR.test(c)) {
      const start = i;
      while (i < query.length && PERMISSION_CHAR.test(query[i]!)) i++;
      const text = query.slice(start, i);
      const upper = text.toUpperCase();
      tokens.push({ kind: upper === "AND" ? "and" : upper === "OR" ? "or" : "perm", text, at: start });
    } else {
      throw syntaxError(`Invalid character '${c}' found in query at position ${i}.`);
    }
  }
  return tokens;
}

export function parsePermissionQuery(query: string): PermissionQuery {
  const tokens = tokenize(query);
  if (tokens.length === 0) throw syntaxError("The permission query is empty.");
  let pos = 0;

  const expression = (): PermissionQuery => {
    const parts = [and()];
    while (tokens[pos]?.kind === "or") {
      pos++;
      parts.push(and());
    }
    return parts.length === 1 ? parts[0]! : { any: parts };
  };
  const and = (): PermissionQuery => {
    const parts = [primary()];
    while (tokens[pos]?.kind === "and") {
      pos++;
      parts.push(primary());
    }
    return parts.length === 1 ? parts[0]! : { all: parts };
  };
  const primary = (): PermissionQuery => {
    const token = tokens[pos];
    if (!token) throw syntaxError("The permission query ends where a permission was expected.");
    if (token.kind === "perm") {
      pos++;
      return token.text;
    }
    if (token.kind === "open") {
      if (tokens[pos + 1]?.kind === "close")
        throw syntaxError(`Empty parentheses found at position ${token.at}.`);
      pos++;
      const inner = expression();
      if (tokens[pos]?.kind !== "close") throw syntaxError(`Unclosed parenthesis at position ${token.at}.`);
      pos++;
      return inner;
    }
    throw syntaxError(`Unexpected '${token.text}' at position ${token.at}: a permission was expected.`);
  };

  const parsed = expression();
  const rest = tokens[pos];
  if (rest) throw syntaxError(`Unexpected '${rest.text}' at position ${rest.at}.`);
  return parsed;
}

export function satisfies(query: PermissionQuery, held: readonly string[]): boolean {
  if (typeof query === "string") return held.includes(query);
  if ("all" in query) return query.all.every((q) => satisfies(q, held));
  return query.any.some((q) => satisfies(q, held));
}
