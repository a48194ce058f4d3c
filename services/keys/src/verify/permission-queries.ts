import { type PermissionQuery, parsePermissionQuery } from "@latchkey/runtime";
import { LRUCache } from "lru-cache";

/** Most distinct query texts kept parsed; a service sees few (one per call site of its callers). */
const MAX_QUERIES = 1_000;

/**
 * Parsed permission queries by their text, so a query asked on every
 * verification is parsed once. Bounded: past MAX_QUERIES the least recently
 * used goes first. A parsed query is immutable and shared; a text that does not
 * parse is not kept (it throws each time, as parsing it would).
 */
export class PermissionQueries {
  private readonly parsed: LRUCache<string, PermissionQuery>;

  constructor(max = MAX_QUERIES) {
    this.parsed = new LRUCache({ max });
  }

  parse(text: string): PermissionQuery {
    const hit = this.parsed.get(text);
    if (hit !== undefined) return hit;
    const query = parsePermissionQuery(text);
    this.parsed.set(text, query);
    return query;
  }

  get size(): number {
    return this.parsed.size;
  }
}
