import type { Clock } from "@latchkey/runtime";
import { crossingAt, DEFAULT_LOW_FRACTION, runCrossings } from "../credit-events.ts";
import type { GroupSpend, KeysStore, Spend, SpendGroup } from "../store/keys-store.ts";

/** One verification waiting for its credit spend. */
export interface PendingSpend {
  keyId: string;
  cost: number;
  resolve(spend: Spend | undefined): void;
  reject(err: unknown): void;
}

/**
 * Every credit spend of this instance, decided with few statements (group
 * commit): while statements are out, the spends that arrive queue and all go
 * together in the next statement, in arrival order. Batches in flight at the
 * same time therefore share statements instead of each running its own and
 * waiting for the key's row lock behind the others.
 *
 * Up to `depth` statements are out at once, the next asked while the one
 * before is still deciding. The store must decide them in the order asked:
 * PostgreSQL does for statements pipelined on one connection
 * (creditSpendsSql), so no statement waits for the round trip of the one
 * before it, and none overtakes it.
 *
 * The semantics are those of spends arriving one by one: per key, in arrival
 * order, each spend succeeds when the balance (after a due refill) covers its
 * cost, never going below 0. A statement decides, per key, a run of spends of
 * one cost (KeysStore.spendCreditsGroups grants the first
 * min(count, floor(balance / cost)) of them); a key asked for with another
 * cost later in the queue starts a new run, decided by the next statement, so
 * as many statements run as the longest sequence of cost changes of one key
 * (one, commonly).
 * A failed statement rejects each of its spends with the error; the ones
 * queued after it still go.
 */
export class SpendQueue {
  private queued: PendingSpend[] = [];
  private out = 0;
  private statementCount = 0;

  constructor(
    private readonly store: Pick<KeysStore, "spendCreditsGroups">,
    private readonly clock: Clock,
    /** Statements out at once; more than 1 only where the store decides them in the order asked. */
    private readonly depth = 1,
    /** CREDITS_LOW_FRACTION: the spend that takes a balance below this share of its baseline says so (0: none). */
    private readonly lowFraction = DEFAULT_LOW_FRACTION,
  ) {}

  /** One spend on its own (a unary verification). */
  spend(keyId: string, cost: number): Promise<Spend | undefined> {
    return new Promise((resolve, reject) => this.submit([{ keyId, cost, resolve, reject }]));
  }

  /** Spends to decide after every spend submitted before them, in this order. */
  submit(spends: readonly PendingSpend[]): void {
    for (const s of spends) this.queued.push(s);
    this.send();
  }

  /** Spend statements run so far. */
  get statements(): number {
    return this.statementCount;
  }

  /** Asks the next statement for what is queued while fewer than `depth` are out. */
  private send(): void {
    while (this.out < this.depth && this.queued.length > 0) {
      const { runs, rest } = firstStatement(this.queued);
      this.queued = rest;
      void this.decide(runs);
    }
  }

  /**
   * One statement for runs of distinct keys. Its spends are answered after
   * the next statement is asked: the verifications they release finish their
   * work (and the HTTP answers theirs) while the next statement is already on
   * its way to the database, instead of before it leaves.
   */
  private async decide(runs: PendingSpend[][]): Promise<void> {
    const groups: SpendGroup[] = runs.map((run) => ({
      keyId: run[0]!.keyId,
      cost: run[0]!.cost,
      count: run.length,
    }));
    this.out++;
    this.statementCount++;
    let results: (GroupSpend | undefined)[] | undefined;
    let failure: unknown;
    try {
      results = await this.store.spendCreditsGroups(groups, this.clock.now());
    } catch (err) {
      failure = err;
    }
    this.out--;
    this.send();
    if (results === undefined) {
      for (const run of runs) for (const s of run) s.reject(failure);
    } else settle(runs, groups, results, this.lowFraction);
  }
}

/**
 * Each spend of a statement's runs answered with its group's result. The one
 * spend of a run that took its key's balance below the low threshold or to 0,
 * and the first one refused for want of credits, say so (credit-events.ts):
 * found once per run, the rest pay a comparison.
 */
function settle(
  runs: readonly PendingSpend[][],
  groups: readonly SpendGroup[],
  results: readonly (GroupSpend | undefined)[],
  lowFraction: number,
): void {
  for (let i = 0; i < runs.length; i++) {
    const run = runs[i]!;
    const result = results[i];
    const cost = groups[i]!.cost;
    const crossings = result === undefined ? undefined : runCrossings(groups[i]!, result, lowFraction);
    for (let j = 0; j < run.length; j++) {
      const s = run[j]!;
      if (result === undefined) s.resolve(undefined);
      else if (result.before === null) s.resolve({ spent: true, remaining: null });
      else if (j < result.granted) {
        const crossed = crossings === undefined ? undefined : crossingAt(crossings, j);
        const remaining = result.before - (j + 1) * cost;
        s.resolve(crossed === undefined ? { spent: true, remaining } : { spent: true, remaining, crossed });
      } else {
        const remaining = result.before - result.granted * cost;
        // The run's first spend refused while credits are left (a cost that does not divide the balance
        // kept it from 0) says the key is exhausted (credit-events.ts). At 0 the spend that took it there
        // said so already.
        if (j === result.granted && remaining > 0 && result.period !== undefined) {
          const crossed = { period: result.period, low: undefined, exhausted: true };
          s.resolve({ spent: false, remaining, crossed });
        } else s.resolve({ spent: false, remaining });
      }
    }
  }
}

/**
 * The next statement of queued spends: each key's first run of one cost. The
 * spends after a change of cost of their key stay queued, in order, for the
 * next statement.
 */
function firstStatement(spends: PendingSpend[]): { runs: PendingSpend[][]; rest: PendingSpend[] } {
  const runs = new Map<string, PendingSpend[]>();
  let ended: Set<string> | undefined;
  const rest: PendingSpend[] = [];
  for (const s of spends) {
    const run = runs.get(s.keyId);
    if (run === undefined) runs.set(s.keyId, [s]);
    else if (run[0]!.cost === s.cost && !ended?.has(s.keyId)) run.push(s);
    else {
      ended ??= new Set();
      ended.add(s.keyId);
      rest.push(s);
    }
  }
  return { runs: [...runs.values()], rest };
}

/**
 * Gathers the credit spends of one verification batch. Every item either
 * reaches its credit step (spend) or finishes without one (done); when all
 * have, the batch's spends join the instance's SpendQueue together, in the
 * order they arrived, so a batch needs one statement (shared with batches in
 * flight at the same time) rather than one per item.
 */
export class SpendCollector {
  private readonly waiting: PendingSpend[] = [];
  private readonly arrived: Uint8Array;
  private outstanding: number;

  constructor(
    private readonly queue: SpendQueue,
    items: number,
  ) {
    this.outstanding = items;
    this.arrived = new Uint8Array(items);
  }

  /** The item at `index` spends; settled once the whole batch has arrived. */
  spend(index: number, keyId: string, cost: number): Promise<Spend | undefined> {
    return new Promise<Spend | undefined>((resolve, reject) => {
      this.waiting.push({ keyId, cost, resolve, reject });
      this.done(index);
    });
  }

  /** The item at `index` needs no spend (or has spent); idempotent. */
  done(index: number): void {
    if (this.arrived[index] === 1) return;
    this.arrived[index] = 1;
    this.outstanding--;
    if (this.outstanding === 0 && this.waiting.length > 0) this.queue.submit(this.waiting);
  }
}
