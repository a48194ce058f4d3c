import { type Clock, type Logger, OldestFirst } from "@latchkey/runtime";
import { ExpiryHeap } from "./expiry-heap.ts";
import { counterRefusals, type RefusalReason, watchCounters } from "./metrics.ts";

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
  /**
   * Denied for want of room, not by the limit: the workspace's counters are full (a new identifier past
   * its budget). Not a ratelimit.exceeded (exceeded.ts).
   */
  refused: boolean;
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
  /** When both windows are out of reach, unix ms: from then on the entry holds nothing and may be dropped. */
  expires: number;
}

/** The counters of one workspace, by expiry, and what its refusals have logged. */
class Workspace {
  readonly heap = new ExpiryHeap();
  /** What its counters cost, as counterBytes counts them. */
  bytes = 0;
  /** Rooms claimed by the group being applied, not yet filled, and their bytes. */
  pending = 0;
  pendingBytes = 0;
  /** Refusals since the last log line, and when that line was written (clock ms). */
  refused = 0;
  loggedAt = Number.NEGATIVE_INFINITY;

  constructor(readonly id: string) {}
}

export interface SlidingWindowsOptions {
  /** Most counters held, all workspaces together (env RATELIMIT_MAX_COUNTERS). */
  maxCounters?: number;
  /** Most counters one workspace holds (env RATELIMIT_MAX_COUNTERS_PER_WORKSPACE). */
  maxCountersPerWorkspace?: number;
  /** Most bytes of counters held, all workspaces together, as counterBytes counts them (env RATELIMIT_MAX_COUNTER_BYTES). */
  maxBytes?: number;
  /** Where refusals are reported: one line per workspace and minute at most. */
  log?: Logger;
}

export const DEFAULT_MAX_COUNTERS = 1_000_000;
export const DEFAULT_MAX_COUNTERS_PER_WORKSPACE = 250_000;
export const DEFAULT_MAX_COUNTER_BYTES = 320 * 1024 * 1024;
/**
 * What a counter costs the heap besides its id: its map entry, its windows, its
 * place in its workspace's heap (bench/memory.ts measures it; README "Memory
 * and bounds").
 */
export const COUNTER_OVERHEAD_BYTES = 200;
/** A character beyond Latin-1: V8 then keeps the whole string at two bytes a character. */
const TWO_BYTE = /[\u0100-\uffff]/;

/**
 * The heap a counter holds, as the bounds count it: the overhead and its id
 * (workspace, namespace, identifier, duration), one byte a character, or two
 * when the id has a character beyond Latin-1. Only a new or dropped counter
 * is measured, never a check of one held.
 */
export const counterBytes = (id: string) => COUNTER_OVERHEAD_BYTES + (TWO_BYTE.test(id) ? 2 : 1) * id.length;
/** A workspace's refusals are logged at most this often (clock ms); the metric counts each one. */
const LOG_EVERY = 60_000;
/** Work of the sweep that runs every SWEEP_EVERY checks: workspaces visited plus counters looked at. */
const SWEEP_EVERY = 64;
const SWEEP_BUDGET = 32;

const SEP = "\u001f";

/** The workspace of a counter key: its first part (see checks.ts counterKey). */
const workspaceOf = (key: string) => {
  const at = key.indexOf(SEP);
  return at < 0 ? key : key.slice(0, at);
};

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
 * Memory is bounded without ever forgetting a count that still weighs: a
 * counter is dropped only once both its windows have ended (dropping it
 * sooner would forgive usage). Each workspace holds at most
 * `maxCountersPerWorkspace` counters, fewer than the room the table has
 * left (`maxCounters` minus all counters held), and, counted in bytes
 * (counterBytes: long identifiers cost more), no more than the bytes the table
 * has left (`maxBytes` minus all bytes held), so no workspace can fill the
 * table: one alone takes at most half, several flooding at once share it and
 * leave the rest to the others (README "Memory and bounds"). A check that
 * needs a new counter when its workspace has none to spare, even after its
 * ended counters are dropped, is denied (fail closed: only that workspace's
 * new identifiers are refused, its existing ones keep counting), counted in
 * latchkey_ratelimit_counter_refusals_total and logged once a minute per
 * workspace. Ended counters are also swept a few at a time as checks arrive.
 */
export class SlidingWindows {
  private readonly counters = new Map<string, Windows>();
  private readonly workspaces = new Map<string, Workspace>();
  /** The sweep visits workspaces in turn (see OldestFirst: a key left in place comes round again). */
  private readonly rotation = new OldestFirst(this.workspaces);
  /** Rooms claimed by the group being applied, all workspaces together, and their bytes. */
  private pending = 0;
  private pendingBytes = 0;
  /** What all counters held cost, as counterBytes counts them. */
  private held = 0;
  private checks = 0;
  /** Entries the last dropEnded looked at. */
  private stepped = 0;
  private readonly maxCounters: number;
  private readonly maxPerWorkspace: number;
  private readonly maxBytes: number;
  private readonly log: Logger | undefined;

  constructor(
    private readonly clock: Clock,
    options: SlidingWindowsOptions = {},
  ) {
    this.maxCounters = options.maxCounters ?? DEFAULT_MAX_COUNTERS;
    this.maxPerWorkspace = options.maxCountersPerWorkspace ?? DEFAULT_MAX_COUNTERS_PER_WORKSPACE;
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_COUNTER_BYTES;
    this.log = options.log;
    watchCounters(this);
  }

  get size(): number {
    return this.counters.size;
  }

  /** What the counters held cost, as counterBytes counts them. */
  get bytes(): number {
    return this.held;
  }

  /** The counters and bytes one workspace holds. */
  heldBy(workspaceId: string): { counters: number; bytes: number } {
    const ws = this.workspaces.get(workspaceId);
    return { counters: ws?.heap.size ?? 0, bytes: ws?.bytes ?? 0 };
  }

  /** Checks every counter of the group and counts them all only if all pass. */
  apply(group: readonly CounterCheck[]): CounterOutcome[] {
    const now = this.clock.now();
    const n = group.length;
    const outcomes: CounterOutcome[] = new Array(n);
    // A group may name one counter twice: later items see the earlier items' cost.
    const pending = n > 1 ? new Map<string, number>() : undefined;
    // Each counter's id is built and hashed once, for the read and the write.
    const ids: string[] = new Array(n);
    // The workspace whose room each new counter took; only allocated when the group makes one.
    let claims: (Workspace | undefined)[] | undefined;
    let all = true;
    for (let i = 0; i < n; i++) {
      const c = group[i]!;
      const id = c.key + SEP + c.duration;
      ids[i] = id;
      const seq = Math.floor(now / c.duration);
      const start = seq * c.duration;
      const e = this.counters.get(id);
      let current = 0;
      let previous = 0;
      if (e !== undefined) {
        // A clock that stepped back (e.seq > seq) keeps the newer counts rather than forgetting them.
        if (e.seq >= seq) {
          current = e.current;
          previous = e.previous;
        } else if (e.seq === seq - 1) previous = e.current;
      }
      const elapsed = (now - start) / c.duration;
      const already = pending?.get(id) ?? 0;
      const effective = current + already + Math.floor(previous * (1 - elapsed)) + c.cost;
      // limit 0 is a ban: it denies even a check that costs nothing.
      let success = c.limit > 0 && effective <= c.limit;
      let refused = false;
      // A check that would count on a counter not held yet needs room for it (one per id per group).
      if (success && e === undefined && c.cost > 0 && !claimedBefore(claims, ids, i, id)) {
        const ws = this.claim(c.key, id, now, ids, i);
        if (ws === undefined) {
          success = false;
          refused = true;
        } else {
          claims ??= new Array(n);
          claims[i] = ws;
        }
      }
      outcomes[i] = {
        success,
        refused,
        limit: c.limit,
        remaining: success ? Math.max(0, c.limit - effective) : 0,
        reset: start + c.duration,
      };
      if (!success) all = false;
      pending?.set(id, already + c.cost);
    }
    if (all) {
      for (let i = 0; i < n; i++) {
        const c = group[i]!;
        if (c.cost > 0) this.add(ids[i]!, c, now, claims?.[i]);
      }
    }
    if (claims !== undefined) {
      for (const ws of claims) {
        if (ws === undefined) continue;
        ws.pending = 0;
        ws.pendingBytes = 0;
      }
      this.pending = 0;
      this.pendingBytes = 0;
    }
    // After the writes, so that nothing this group read is dropped under it.
    if (++this.checks % SWEEP_EVERY === 0) this.sweep(now, SWEEP_BUDGET);
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

  private add(id: string, c: CounterCheck, now: number, claimed: Workspace | undefined): void {
    const seq = Math.floor(now / c.duration);
    const e = this.counters.get(id);
    if (e !== undefined) {
      if (e.seq >= seq) {
        e.current += c.cost;
        return;
      }
      // Rolled in place: its place in the workspace's heap goes stale, which the heap's reader expects.
      e.previous = e.seq === seq - 1 ? e.current : 0;
      e.seq = seq;
      e.current = c.cost;
      e.expires = (seq + 2) * c.duration;
      return;
    }
    // The room was claimed in the first pass; a new counter without a claim is not reachable.
    const ws = claimed ?? this.workspace(workspaceOf(c.key));
    const expires = (seq + 2) * c.duration;
    this.counters.set(id, { seq, current: c.cost, previous: 0, expires });
    ws.heap.push(expires, id);
    const bytes = counterBytes(id);
    ws.bytes += bytes;
    this.held += bytes;
  }

  private workspace(id: string): Workspace {
    let ws = this.workspaces.get(id);
    if (ws === undefined) {
      ws = new Workspace(id);
      this.workspaces.set(id, ws);
    }
    return ws;
  }

  /**
   * Room for one new counter `counter` of the key's workspace, or undefined
   * (counted and logged) when it has none even after dropping ended counters.
   * `busy` are the ids the group has read so far (the first `upto`): they are
   * not dropped under it.
   */
  private claim(
    key: string,
    counter: string,
    now: number,
    busy: readonly string[],
    upto: number,
  ): Workspace | undefined {
    const id = workspaceOf(key);
    const bytes = counterBytes(counter);
    for (;;) {
      // Looked up each time: a sweep below may drop the record of a workspace holding nothing.
      const ws = this.workspace(id);
      const held = ws.heap.size + ws.pending;
      if (held >= this.maxPerWorkspace) {
        if (this.dropEnded(ws, now, Number.POSITIVE_INFINITY, 1, busy, upto) > 0) continue;
        this.refuse(ws, "workspace", now);
        return undefined;
      }
      // Fewer than the room left, in counters and in bytes (with this one, no more than the bytes left
      // free): a workspace can never fill the table, whatever its bound or its identifiers' length.
      if (
        held >= this.maxCounters - this.counters.size - this.pending ||
        ws.bytes + ws.pendingBytes + bytes > this.maxBytes - this.held - this.pendingBytes - bytes
      ) {
        if (this.dropEnded(ws, now, Number.POSITIVE_INFINITY, 1, busy, upto) > 0) continue;
        if (this.sweep(now, SWEEP_BUDGET, busy, upto) > 0) continue;
        this.refuse(ws, "table", now);
        return undefined;
      }
      ws.pending++;
      ws.pendingBytes += bytes;
      this.pending++;
      this.pendingBytes += bytes;
      return ws;
    }
  }

  /**
   * Drops counters of the workspace whose windows have both ended, earliest
   * first, until `drops` are dropped, `steps` entries are looked at, or none is
   * due; a counter that rolled since it was pushed is pushed again with its
   * new expiry. Answers how many were dropped; the steps taken are in
   * `this.stepped`.
   */
  private dropEnded(
    ws: Workspace,
    now: number,
    steps: number,
    drops: number,
    busy?: readonly string[],
    upto = 0,
  ): number {
    let kept: string[] | undefined;
    let dropped = 0;
    let stepped = 0;
    while (stepped < steps && dropped < drops && ws.heap.peek() <= now) {
      stepped++;
      const id = ws.heap.pop()!;
      const e = this.counters.get(id)!;
      if (e.expires > now) ws.heap.push(e.expires, id);
      else if (upto > 0 && busy!.lastIndexOf(id, upto - 1) >= 0) {
        kept ??= [];
        kept.push(id);
      } else {
        this.counters.delete(id);
        const bytes = counterBytes(id);
        ws.bytes -= bytes;
        this.held -= bytes;
        dropped++;
      }
    }
    if (kept !== undefined) for (const id of kept) ws.heap.push(this.counters.get(id)!.expires, id);
    this.stepped = stepped;
    return dropped;
  }

  /** Visits workspaces in turn, dropping their ended counters, for about `budget` steps; answers how many went. */
  private sweep(now: number, budget: number, busy?: readonly string[], upto = 0): number {
    let dropped = 0;
    for (let visits = this.workspaces.size; visits > 0 && budget > 0; visits--) {
      const id = this.rotation.next();
      if (id === undefined) break;
      const ws = this.workspaces.get(id)!;
      dropped += this.dropEnded(ws, now, budget, Number.POSITIVE_INFINITY, busy, upto);
      budget -= this.stepped + 1;
      if (ws.heap.size === 0 && ws.pending === 0) this.workspaces.delete(id);
    }
    return dropped;
  }

  private refuse(ws: Workspace, reason: RefusalReason, now: number): void {
    counterRefusals.inc({ reason });
    ws.refused++;
    if (this.log === undefined || now - ws.loggedAt < LOG_EVERY) return;
    this.log.warn(
      {
        workspaceId: ws.id,
        reason,
        counters: ws.heap.size,
        bound: this.maxPerWorkspace,
        bytes: ws.bytes,
        table: this.counters.size,
        tableBound: this.maxCounters,
        tableBytes: this.held,
        tableBytesBound: this.maxBytes,
        refused: ws.refused,
      },
      "ratelimit: no room for a new counter of this workspace; checks of its new identifiers are denied",
    );
    ws.loggedAt = now;
    ws.refused = 0;
  }
}

/** Whether an earlier check of the group already claimed room for this id (a group naming one new counter twice). */
function claimedBefore(
  claims: readonly (Workspace | undefined)[] | undefined,
  ids: readonly string[],
  i: number,
  id: string,
): boolean {
  if (claims === undefined) return false;
  for (let j = 0; j < i; j++) if (claims[j] !== undefined && ids[j] === id) return true;
  return false;
}
