import { ConnectError } from "@connectrpc/connect";
import { ErrorReason, errorDetailOf } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { evaluatePermissionQuery, type PermissionQuery, parsePermissionQuery } from "./permission-query.ts";

const p = (permission: string): PermissionQuery => ({ type: "permission", permission });
const and = (...operands: PermissionQuery[]): PermissionQuery => ({ type: "and", operands });
const or = (...operands: PermissionQuery[]): PermissionQuery => ({ type: "or", operands });

/** The message of the syntax error parsing `query` throws, after checking it is one. */
function syntaxErrorOf(query: string): string {
  try {
    parsePermissionQuery(query);
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectError);
    expect(errorDetailOf(err)?.reason).toBe(ErrorReason.PERMISSIONS_QUERY_SYNTAX);
    return (err as ConnectError).rawMessage;
  }
  throw new Error(`'${query}' parsed without error`);
}

const allows = (query: string, held: string[]) => evaluatePermissionQuery(parsePermissionQuery(query), held);

describe("parsePermissionQuery", () => {
  it("parses a single permission", () => {
    expect(parsePermissionQuery("documents.read")).toEqual(p("documents.read"));
  });

  it("accepts letters, digits and . _ - * : / in a permission", () => {
    expect(parsePermissionQuery("Api_1.x-y:z/w.*")).toEqual(p("Api_1.x-y:z/w.*"));
  });

  it("binds AND tighter than OR on either side", () => {
    expect(parsePermissionQuery("a OR b AND c")).toEqual(or(p("a"), and(p("b"), p("c"))));
    expect(parsePermissionQuery("a AND b OR c")).toEqual(or(and(p("a"), p("b")), p("c")));
  });

  it("collects a chain of one operator into one node", () => {
    expect(parsePermissionQuery("a AND b AND c")).toEqual(and(p("a"), p("b"), p("c")));
    expect(parsePermissionQuery("a OR b OR c")).toEqual(or(p("a"), p("b"), p("c")));
  });

  it("lets parentheses override precedence", () => {
    expect(parsePermissionQuery("(a OR b) AND c")).toEqual(and(or(p("a"), p("b")), p("c")));
    expect(parsePermissionQuery("a AND (b OR (c AND d))")).toEqual(
      and(p("a"), or(p("b"), and(p("c"), p("d")))),
    );
  });

  it("treats redundant parentheses as their content", () => {
    expect(parsePermissionQuery("((a))")).toEqual(p("a"));
  });

  it("reads operators in any case", () => {
    const expected = or(and(p("a"), p("b")), p("c"));
    expect(parsePermissionQuery("a and b or c")).toEqual(expected);
    expect(parsePermissionQuery("a And b Or c")).toEqual(expected);
    expect(parsePermissionQuery("a aNd b oR c")).toEqual(expected);
  });

  it("needs no spaces around parentheses and allows any whitespace between tokens", () => {
    expect(parsePermissionQuery("(a)AND(b)")).toEqual(and(p("a"), p("b")));
    expect(parsePermissionQuery("  a\tAND\n b  ")).toEqual(and(p("a"), p("b")));
  });

  it("keeps a permission that merely contains an operator word", () => {
    expect(parsePermissionQuery("brand AND order.or")).toEqual(and(p("brand"), p("order.or")));
  });

  it("accepts a query of exactly 1000 characters", () => {
    const query = "a".repeat(1000);
    expect(parsePermissionQuery(query)).toEqual(p(query));
  });
});

describe("parsePermissionQuery syntax errors", () => {
  it("refuses a query longer than 1000 characters", () => {
    expect(syntaxErrorOf("a".repeat(1001))).toBe(
      "The permission query is 1001 characters long, too long at position 1000: at most 1000 characters are allowed.",
    );
  });

  it("refuses an empty or blank query at position 0", () => {
    expect(syntaxErrorOf("")).toBe("The permission query is empty at position 0: name a permission.");
    expect(syntaxErrorOf("   ")).toBe("The permission query is empty at position 0: name a permission.");
  });

  it("names an invalid character and its position", () => {
    expect(syntaxErrorOf("a AND b!")).toBe(
      "Invalid character '!' found in query at position 7: a permission may hold letters, digits and . _ - * : /",
    );
    expect(syntaxErrorOf("a && b")).toMatch(/^Invalid character '&' found in query at position 2:/);
  });

  it("names empty parentheses and where they open", () => {
    expect(syntaxErrorOf("a AND ()")).toBe("Empty parentheses found at position 6.");
    expect(syntaxErrorOf("( )")).toBe("Empty parentheses found at position 0.");
  });

  it("names an unclosed parenthesis by where it opened", () => {
    expect(syntaxErrorOf("(a AND b")).toBe(
      "The parenthesis opened at position 0 is not closed: expected ')' but found the end at position 8.",
    );
    expect(syntaxErrorOf("x OR (a (b)")).toBe(
      "The parenthesis opened at position 5 is not closed: expected ')' but found '(' at position 8.",
    );
  });

  it("names an unmatched closing parenthesis", () => {
    expect(syntaxErrorOf("a)")).toBe("Unmatched ')' at position 1.");
    expect(syntaxErrorOf("(a) OR b)")).toBe("Unmatched ')' at position 8.");
  });

  it("names an operator where a permission belongs", () => {
    expect(syntaxErrorOf("AND a")).toBe("Expected a permission or '(' but found 'AND' at position 0.");
    expect(syntaxErrorOf("a OR or b")).toBe("Expected a permission or '(' but found 'or' at position 5.");
    expect(syntaxErrorOf("(OR a)")).toBe("Expected a permission or '(' but found 'OR' at position 1.");
  });

  it("names a closing parenthesis where a permission belongs", () => {
    expect(syntaxErrorOf("a AND )")).toBe("Expected a permission or '(' but found ')' at position 6.");
  });

  it("names the end of the query after a trailing operator", () => {
    expect(syntaxErrorOf("a AND")).toBe("Expected a permission or '(' but found the end at position 5.");
    expect(syntaxErrorOf("a or ")).toBe("Expected a permission or '(' but found the end at position 5.");
  });

  it("names two permissions without an operator between them", () => {
    expect(syntaxErrorOf("a b")).toBe(
      "Expected AND, OR or the end of the query but found 'b' at position 2.",
    );
    expect(syntaxErrorOf("(a) (b)")).toBe(
      "Expected AND, OR or the end of the query but found '(' at position 4.",
    );
  });
});

describe("evaluatePermissionQuery", () => {
  it("grants an exactly held permission and refuses one not held", () => {
    expect(allows("documents.read", ["documents.read"])).toBe(true);
    expect(allows("documents.write", ["documents.read"])).toBe(false);
    expect(allows("documents.read", [])).toBe(false);
  });

  it("matches case-sensitively", () => {
    expect(allows("Documents.Read", ["documents.read"])).toBe(false);
  });

  it("needs every operand of AND and one operand of OR", () => {
    expect(allows("a AND b", ["a", "b"])).toBe(true);
    expect(allows("a AND b", ["a"])).toBe(false);
    expect(allows("a OR b", ["b"])).toBe(true);
    expect(allows("a OR b", ["c"])).toBe(false);
  });

  it("evaluates with AND binding tighter than OR", () => {
    // a OR (b AND c): a alone is enough, c alone is not.
    expect(allows("a OR b AND c", ["a"])).toBe(true);
    expect(allows("a OR b AND c", ["c"])).toBe(false);
    // (a OR b) AND c with parentheses: a alone is not enough.
    expect(allows("(a OR b) AND c", ["a"])).toBe(false);
    expect(allows("(a OR b) AND c", ["b", "c"])).toBe(true);
  });

  it("lets a held wildcard grant every sub-permission at any depth", () => {
    expect(allows("documents.read", ["documents.*"])).toBe(true);
    expect(allows("documents.write.own", ["documents.*"])).toBe(true);
    expect(allows("documents.read AND documents.write", ["documents.*"])).toBe(true);
  });

  it("does not let a wildcard grant its parent or a sibling tree", () => {
    expect(allows("documents", ["documents.*"])).toBe(false);
    expect(allows("documentsx.read", ["documents.*"])).toBe(false);
    expect(allows("billing.read", ["documents.*"])).toBe(false);
  });

  it("lets a wildcard in the middle stand for exactly one segment", () => {
    expect(allows("documents.d1.read", ["documents.*.read"])).toBe(true);
    expect(allows("documents.d1.write", ["documents.*.read"])).toBe(false);
    expect(allows("documents.d1.x.read", ["documents.*.read"])).toBe(false);
  });

  it("lets a held * grant everything", () => {
    expect(allows("anything.at.all AND other", ["*"])).toBe(true);
  });

  it("reads a * in the query literally: only a held wildcard covering it satisfies it", () => {
    expect(allows("documents.*", ["documents.read"])).toBe(false);
    expect(allows("documents.*", ["documents.*"])).toBe(true);
  });

  it("accepts the held permissions as a Set", () => {
    expect(evaluatePermissionQuery(parsePermissionQuery("a AND b.c"), new Set(["a", "b.*"]))).toBe(true);
    expect(evaluatePermissionQuery(parsePermissionQuery("a AND b.c"), new Set(["a"]))).toBe(false);
  });
});
