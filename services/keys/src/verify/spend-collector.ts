import { type Clock, domainError, ErrorReason, type LoopProgress, loopProgress } from "@latchkey/runtime";
import { crossingAt, DEFAULT_LOW_FRACTION, runCrossings } from "../credit-events.ts";
import type { GroupSpend, KeysStore, Spend, SpendGroup } from "../store/keys-store.ts";

/**
 * Most spends of one workspace waiting for a statement: past it, its spends
 * answer UNAVAILABLE at once rather than queue without bound ahead of others.
 */
export const MAX_QUEUED_SPENDS = 10_000;

/** Most keys one spend statement decides, shared out between the workspaces with spends waiting. */
export const MAX_STATEMENT_KEYS = 1_000;

const tooManySpends = () =>
  domainError(
    ErrorReason.UNAVAILABLE,
    "Too many credit spends of this workspace are waiting for the database; retry shortly.",
  );

/** One verification waiting for its credit spend. */
export interface PendingSpend {
  /** The key's workspace (the caller's): spends wait in a queue per workspace. */
  workspaceId: string;
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
 *
 * Workspaces share it with a bound each: spends wait in a queue per workspace,
 * at most MAX_QUEUED_SPENDS of one workspace (past it a spend answers
 * UNAVAILABLE at once), and a statement decides at most MAX_STATEMENT_KEYS
 * keys, shared out between the workspaces with spends waiting, whose order
 * turns with each statement. So a workspace with tens of thousands of spends
 * waiting makes another's wait one statement, not all of its own.
 */
export class SpendQueue {
  /** Spends waiting per workspace; the Map's order is the order they are served in. */
  private readonly queued = new Map<string, PendingSpend[]>();
  private out = 0;
  private statementCount = 0;
  private readonly idle: NodeJS.Timeout;

  constructor(
    private readonly store: Pick<KeysStore, "spendCreditsGroups">,
    private readonly clock: Clock,
    /** Statements out at once; more than 1 only where the store decides them in the order asked. */
    private readonly depth = 1,
    /** CREDITS_LOW_FRACTION: the spend that takes a balance below this share of its baseline says so (0: none). */
    private readonly lowFraction = DEFAULT_LOW_FRACTION,
    private readonly progress: LoopProgress = loopProgress("keys.credit-spends"),
    private readonly bounds = { queued: MAX_QUEUED_SPENDS, keys: MAX_STATEMENT_KEYS },
  ) {
    // Each statement decided is a unit of progress; an idle queue says so once a second, so the mark
    // stops moving only while spends wait on statements that do not come back.
    this.idle = setInterval(() => {
      if (this.out === 0 && this.queued.size === 0) this.progress.mark();
    }, 1_000);
    this.idle.unref();
  }

  /** Stops marking progress while idle. */
  close(): void {
    clearInterval(this.idle);
  }

  /** One spend on its own (a unary verification). */
  spend(workspaceId: string, keyId: string, cost: number): Promise<Spend | undefined> {
    return new Promise((resolve, reject) => this.submit([{ workspaceId, keyId, cost, resolve, reject }]));
  }

  /**
   * Spends to decide after every spend of their workspace submitted before
   * them, in this order; each past its workspace's bound is refused at once.
   */
  submit(spends: readonly PendingSpend[]): void {
    for (const s of spends) {
      let queue = this.queued.get(s.workspaceId);
      if (queue === undefined) {
        queue = [];
        this.queued.set(s.workspaceId, queue);
      }
      if (queue.length < this.bounds.queued) queue.push(s);
      else s.reject(tooManySpends());
    }
    this.send();
  }

  /** Spend statements run so far. */
  get statements(): number {
    return this.statementCount;
  }

  /** Spends waiting for a statement, in all or of one workspace. */
  waiting(workspaceId?: string): number {
    if (workspaceId !== undefined) return this.queued.get(workspaceId)?.length ?? 0;
    let n = 0;
    for (const queue of this.queued.values()) n += queue.length;
    return n;
  }

  /** Asks the next statement for what is queued while fewer than `depth` are out. */
  private send(): void {
    while (this.out < this.depth && this.queued.size > 0) {
      const runs = this.nextStatement();
      if (runs.length === 0) return;
      void this.decide(runs);
    }
  }

  /**
   * The next statement's runs: each workspace with spends waiting, in turn,
   * gives the first runs of up to its part of MAX_STATEMENT_KEYS keys; the
   * workspaces served go to the back of the order.
   */
  private nextStatement(): PendingSpend[][] {
    const runs: PendingSpend[][] = [];
    const part = Math.max(1, Math.ceil(this.bounds.keys / this.queued.size));
    const served: string[] = [];
    for (const [workspaceId, queue] of this.queued) {
      if (runs.length >= this.bounds.keys) break;
      const taken = firstStatement(queue, Math.min(part, this.bounds.keys - runs.length));
      for (const run of taken.runs) runs.push(run);
      served.push(workspaceId);
      queue.length = 0;
      for (const s of taken.rest) queue.push(s);
    }
    for (const workspaceId of served) {
      const queue = this.queued.get(workspaceId)!;
      this.queued.delete(workspaceId);
      if (queue.length > 0) this.queued.set(workspaceId, queue);
    }
    return runs;
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
    this.progress.mark();
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
        // baseline and period for a key's own thresholds (credit-thresholds.ts).
        const { baseline, period } = result;
        s.resolve(
          crossed === undefined
            ? { spent: true, remaining, baseline, period }
            : { spent: true, remaining, crossed, baseline, period },
        );
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
 * The next statement of queued spends: each key's first run of one cost, for
 * at most `maxKeys` keys. The spends after a change of cost of their key, and
 * those of further keys, stay queued, in order, for the next statement.
 */
function firstStatement(
  spends: readonly PendingSpend[],
  maxKeys: number,
): { runs: PendingSpend[][]; rest: PendingSpend[] } {
  const runs = new Map<string, PendingSpend[]>();
  let ended: Set<string> | undefined;
  const rest: PendingSpend[] = [];
  for (const s of spends) {
    const run = runs.get(s.keyId);
    if (run === undefined) {
      if (runs.size < maxKeys) runs.set(s.keyId, [s]);
      else {
        // A key left for a later statement: its spends after this one must wait with it.
        ended ??= new Set();
        ended.add(s.keyId);
        rest.push(s);
      }
    } else if (run[0]!.cost === s.cost && !ended?.has(s.keyId)) run.push(s);
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
  spend(index: number, workspaceId: string, keyId: string, cost: number): Promise<Spend | undefined> {
    return new Promise<Spend | undefined>((resolve, reject) => {
      this.waiting.push({ workspaceId, keyId, cost, resolve, reject });
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
