import {
  type AnalyticsStore,
  bucketOf,
  type RatelimitCheck,
  type RatelimitCount,
  type RatelimitQuery,
  type Verification,
  type VerificationCount,
  type VerificationQuery,
} from "./analytics-store.ts";

/**
 * Analytics in memory: unit tests and the embedded default (one process, no
 * ClickHouse). Events are deduplicated by requestId like the ClickHouse store.
 * Bounded: past `maxRows` the oldest verifications are forgotten.
 */
export class MemoryAnalyticsStore implements AnalyticsStore {
  readonly verificationRows: Verification[] = [];
  readonly ratelimitRows: RatelimitCheck[] = [];
  private readonly seen = new Set<string>();
  private readonly seenChecks = new Set<string>();

  constructor(private readonly maxRows = 1_000_000) {}

  async insertVerifications(rows: readonly Verification[]): Promise<number> {
    let added = 0;
    for (const row of rows) {
      if (this.seen.has(row.requestId)) continue;
      this.seen.add(row.requestId);
      this.verificationRows.push({ ...row, tags: [...row.tags] });
      added++;
    }
    while (this.verificationRows.length > this.maxRows) {
      const old = this.verificationRows.shift();
      if (old) this.seen.delete(old.requestId);
    }
    return added;
  }

  async insertRatelimits(rows: readonly RatelimitCheck[]): Promise<number> {
    let added = 0;
    for (const row of rows) {
      if (this.seenChecks.has(row.requestId)) continue;
      this.seenChecks.add(row.requestId);
      this.ratelimitRows.push({ ...row });
      added++;
    }
    while (this.ratelimitRows.length > this.maxRows) {
      const old = this.ratelimitRows.shift();
      if (old) this.seenChecks.delete(old.requestId);
    }
    return added;
  }

  async verifications(q: VerificationQuery): Promise<VerificationCount[]> {
    const counts = new Map<string, VerificationCount>();
    for (const v of this.verificationRows) {
      if (!matches(v, q)) continue;
      const time = bucketOf(v.time, q.granularity);
      for (const [group, externalId] of groupsOf(v, q)) {
        const id = `${time}\u0000${group}\u0000${externalId}\u0000${v.outcome}`;
        const c = counts.get(id);
        if (c) {
          c.count++;
          c.spentCredits += v.spentCredits;
        } else {
          counts.set(id, {
            time,
            group,
            externalId,
            outcome: v.outcome,
            count: 1,
            spentCredits: v.spentCredits,
          });
        }
      }
    }
    return [...counts.values()];
  }

  async ratelimits(q: RatelimitQuery): Promise<RatelimitCount[]> {
    const counts = new Map<string, RatelimitCount>();
    for (const r of this.ratelimitRows) {
      if (
        r.workspaceId !== q.workspaceId ||
        r.time < q.start ||
        r.time >= q.end ||
        (q.namespaceIds !== undefined && !q.namespaceIds.includes(r.namespaceId)) ||
        (q.identifier !== undefined && r.identifier !== q.identifier)
      ) {
        continue;
      }
      const time = bucketOf(r.time, q.granularity);
      const namespaceId = q.groupBy === "none" ? "" : r.namespaceId;
      const identifier = q.groupBy === "identifier" ? r.identifier : "";
      const id = `${time}\u0000${namespaceId}\u0000${identifier}\u0000${r.passed}`;
      const c = counts.get(id);
      if (c) c.count += r.count ?? 1;
      else counts.set(id, { time, namespaceId, identifier, passed: r.passed, count: r.count ?? 1 });
    }
    return [...counts.values()];
  }

  async ping(): Promise<boolean> {
    return true;
  }
}

function matches(v: Verification, q: VerificationQuery): boolean {
  return (
    v.workspaceId === q.workspaceId &&
    v.time >= q.start &&
    v.time < q.end &&
    (q.apiIds === undefined || q.apiIds.includes(v.apiId)) &&
    (q.keyId === undefined || v.keyId === q.keyId) &&
    (q.identity === undefined || v.identityId === q.identity || v.externalId === q.identity) &&
    q.tags.every((t) => v.tags.includes(t))
  );
}

/** The [group, externalId] pairs a verification counts under; one per distinct tag when grouped by tag. */
function groupsOf(v: Verification, q: VerificationQuery): [string, string][] {
  switch (q.groupBy) {
    case "none":
      return [["", ""]];
    case "key":
      return [[v.keyId, ""]];
    case "identity":
      return [[v.identityId, v.externalId]];
    case "tag":
      return [...new Set(v.tags)].map((t) => [t, ""]);
    case "outcome":
      return [[v.outcome, ""]];
    default: {
      const never: never = q.groupBy;
      throw new Error(`unknown grouping ${never}`);
    }
  }
}
