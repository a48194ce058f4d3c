import { parsePermissionQuery } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { PermissionQueries } from "./permission-queries.ts";

describe("PermissionQueries", () => {
  it("parses a text once and answers the same parsed query after", () => {
    const queries = new PermissionQueries();
    const first = queries.parse("documents.read AND documents.write");
    expect(first).toEqual(parsePermissionQuery("documents.read AND documents.write"));
    expect(queries.parse("documents.read AND documents.write")).toBe(first);
    expect(queries.size).toBe(1);
  });

  it("keeps at most max queries, dropping the least recently used", () => {
    const queries = new PermissionQueries(2);
    const a = queries.parse("a");
    queries.parse("b");
    queries.parse("c");
    expect(queries.size).toBe(2);
    expect(queries.parse("a")).not.toBe(a);
  });

  it("keeps a query in use while newly parsed ones push out those not used since", () => {
    const queries = new PermissionQueries(2);
    const a = queries.parse("a");
    const b = queries.parse("b");
    // a, parsed first, is asked again; then c needs room.
    expect(queries.parse("a")).toBe(a);
    queries.parse("c");
    expect(queries.parse("a")).toBe(a);
    expect(queries.parse("b")).not.toBe(b);
  });

  it("throws for a text that does not parse each time and keeps nothing of it", () => {
    const queries = new PermissionQueries();
    expect(() => queries.parse("a AND")).toThrow();
    expect(() => queries.parse("a AND")).toThrow();
    expect(queries.size).toBe(0);
  });
});
