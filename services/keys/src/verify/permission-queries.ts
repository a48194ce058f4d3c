import { OldestFirst, type PermissionQuery, parsePermissionQuery } from "@latchkey/runtime";

/** Most distinct query texts kept parsed; a service sees few (one per call site of its callers). */
const MAX_QUERIES = 1_000;

/**
 * Parsed permission queries by their text, so a query asked on every
 * verification is parsed once. Bounded: past MAX_QUERIES the oldest parsed
 * goes first. A parsed query is immutable and shared; a text that does not
 * parse is not kept (it throws each time, as parsing it would).
 */
export class PermissionQueries {
  private readonly parsed = new Map<string, PermissionQuery>();
  private readonly oldest = new OldestFirst(this.parsed);

  constructor(private readonly max = MAX_QUERIES) {}

  parse(text: string): PermissionQuery {
    const hit = this.parsed.get(text);
    if (hit !== undefined) return hit;
    const query = parsePermissionQuery(text);
    this.oldest.trim(this.max - 1);
    this.parsed.set(text, query);
    return query;
  }

  get size(): number {
    return this.parsed.size;
  }
}
