import { ErrorReason, errorDetailOf } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { parsePermissionQuery, satisfies } from "./permission-query.ts";

const check = (query: string, held: string[]) => satisfies(parsePermissionQuery(query), held);

describe("permission query", () => {
  it("binds AND tighter than OR", () => {
    expect(check("a OR b AND c", ["a"])).toBe(true);
    expect(check("(a OR b) AND c", ["a"])).toBe(false);
    expect(check("a or b and c", ["b", "c"])).toBe(true);
  });

  it("matches permissions exactly, so * is a literal character", () => {
    expect(check("documents.*", ["documents.read"])).toBe(false);
    expect(check("documents.*", ["documents.*"])).toBe(true);
    expect(check("ns:read/x", ["ns:read/x"])).toBe(true);
  });

  it.each([
    ["a AND", "The permission query ends where a permission was expected."],
    ["()", "Empty parentheses found at position 0."],
    ["(a OR b", "Unclosed parenthesis at position 0."],
    ["a b", "Unexpected 'b' at position 2."],
    ["a & b", "Invalid character '&' found in query at position 2."],
    ["   ", "The permission query is empty."],
  ])("refuses %j with PERMISSIONS_QUERY_SYNTAX", (query, message) => {
    try {
      parsePermissionQuery(query);
      expect.unreachable();
    } catch (err) {
      expect(errorDetailOf(err)?.reason).toBe(ErrorReason.PERMISSIONS_QUERY_SYNTAX);
      expect((err as Error).message).toContain(message);
    }
  });
});
