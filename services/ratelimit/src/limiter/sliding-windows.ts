import { type Clock, OldestFirst } from "@latchkey/runtime";

/** One counter operation, already resolved: overrides applied, namespace known. */
export interface CounterCheck {
  /** Workspace, namespace id and identifier: decides the owning replica. */
  key: string;
  limit: number;
  /** Window length in ms; with the key it names one counter (the limit does not). */
  duration: number;
  /** 0 checks without consuming. */
  cost: number;
}

export interface CounterOutcome {
  success: boolean;
  /** The limit applied. */
  limit: number;
  remaining: number;
  /** End of the current fixed window, unix ms. */
  reset: number;
}

/** The two fixed windows of one counter: the current one (`seq`) and the one before it. */
interface Windows {
  seq: number;
  current: number;
  previous: number;
  /** When both windows are out of reach, unix ms; the sweep drops the entry then. */
  expires: number;
}

const SEP = "\u001f";

/**
 * Sliding-window counters made of two fixed windows aligned to the epoch
 * (window sequence = floor(now / duration)), the previous window weighted by
 * the part of it still inside the sliding window:
 *
 *   effective = current + floor(previous × (1 − elapsed fraction)) + cost
 *
 * A check is denied when effective > limit. `apply` reads and writes without
 * awaiting, so on one process concurrent checks never interleave: with limit L
 * and N > L checks in one window, exactly L succeed.
 *
 * Memory is bounded: entries whose windows have both passed are swept a few at
 * a time as checks arrive, and beyond `maxCounters` the least recently rolled
 * counters are dropped (they would under-count, so the bound is generous).
 */
export class SlidingWindows {
  private readonly counters = new Map<string, Windows>();
  /** The least recently rolled counter next, for the sweep and the bound (see OldestFirst). */
  private readonly oldest = new OldestFirst(this.counters);
  private writes = 0;

  constructor(
    private readonly clock: Clock,
    private readonly maxCounters = 1_000_000,
  ) {}

  get size(): number {
    return this.counters.size;
  }

  /** Checks every counter of the group and counts them all only if all pass. */
  apply(group: readonly CounterCheck[]): CounterOutcome[] {
    const now = this.clock.now();
    const outcomes: CounterOutcome[] = new Array(group.length);
    // A group may name one counter twice: later items see the earlier items' cost.
    const pending = group.length > 1 ? new Map<string, number>() : undefined;
    // Each counter's id is built and hashed once, for the read and the write.
    const ids: string[] = new Array(group.length);
    let all = true;
    for (let i = 0; i < group.length; i++) {
      const c = group[i]!;
      const id = c.key + SEP + c.duration;
      ids[i] = id;
      const seq = Math.floor(now / c.duration);
      const start = seq * c.duration;
      const { current, previous } = this.read(id, seq);
      const elapsed = (now - start) / c.duration;
      const already = pending?.get(id) ?? 0;
      const effective = current + already + Math.floor(previous * (1 - elapsed)) + c.cost;
      // limit 0 is a ban: it denies even a check that costs nothing.
      const success = c.limit > 0 && effective <= c.limit;
      outcomes[i] = {
        success,
        limit: c.limit,
        remaining: success ? Math.max(0, c.limit - effective) : 0,
        reset: start + c.duration,
      };
      if (!success) all = false;
      pending?.set(id, already + c.cost);
    }
    if (all) {
      for (let i = 0; i < group.length; i++) {
        const c = group[i]!;
        if (c.cost > 0) this.add(ids[i]!, now, c.duration, c.cost);
      }
    }
    return outcomes;
  }

  /** Gives back a cost counted in the window that ended at `reset` (another part of its group failed elsewhere). */
  undo(check: CounterCheck, reset: number): void {
    const entry = this.counters.get(check.key + SEP + check.duration);
    if (!entry) return;
    const seq = reset / check.duration - 1;
    if (entry.seq === seq) entry.current = Math.max(0, entry.current - check.cost);
    else if (entry.seq === seq + 1) entry.previous = Math.max(0, entry.previous - check.cost);
  }

  private read(id: string, seq: number): { current: number; previous: number } {
    const e = this.counters.get(id);
    if (e === undefined) return ZERO;
    if (e.seq === seq) return e;
    if (e.seq === seq - 1) return { current: 0, previous: e.current };
    // A clock that stepped back keeps the newer counts rather than forgetting them.
    if (e.seq > seq) return e;
    return ZERO;
  }

  private add(id: string, now: number, duration: number, cost: number): void {
    if (++this.writes % 64 === 0) this.sweep(now);
    const seq = Math.floor(now / duration);
    const e = this.counters.get(id);
    if (e !== undefined && e.seq >= seq) {
      e.current += cost;
      return;
    }
    const previous = e !== undefined && e.seq === seq - 1 ? e.current : 0;
    // Re-inserting on every roll keeps the map ordered by last roll, which the sweep and the bound rely on.
    if (e !== undefined) this.counters.delete(id);
    this.counters.set(id, { seq, current: cost, previous, expires: (seq + 2) * duration });
    this.oldest.trim(this.maxCounters);
  }

  /** Looks at a few of the least recently rolled counters: drops the expired, moves the live to the back. */
  private sweep(now: number): void {
    for (let i = 0; i < 32; i++) {
      const id = this.oldest.next();
      if (id === undefined) return;
      const e = this.counters.get(id)!;
      this.counters.delete(id);
      if (e.expires > now) this.counters.set(id, e);
    }
  }
}

const ZERO = { current: 0, previous: 0 } as const;
