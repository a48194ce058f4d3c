import type { KeysDeps } from "./deps.ts";
import type { Spender } from "./rpc/verifyKey.ts";
import type { Spend, SpendGroup } from "./store/keys-store.ts";

interface Waiting {
  keyId: string;
  cost: number;
  resolve(spend: Spend | undefined): void;
  reject(err: unknown): void;
}

/**
 * Coalesces the credit spends of one verification batch. Every item either
 * reaches its credit step (spend) or finishes without one (pass); when all
 * have, the spends go to the store together: the requests of one key with one
 * cost form one group, decided in one statement for the whole batch, and
 * handed out in request order, exactly as if they had arrived one by one. A
 * key asked for with unequal costs falls back to one statement per request,
 * in request order.
 */
export class SpendCollector {
  private readonly waiting: Waiting[] = [];
  private outstanding: number;

  constructor(
    private readonly deps: KeysDeps,
    items: number,
  ) {
    this.outstanding = items;
  }

  /** The spender for one item, and the function to call when that item is done. */
  forItem(): { spend: Spender; done(): void } {
    let arrived = false;
    const arrive = () => {
      if (arrived) return;
      arrived = true;
      this.outstanding--;
      if (this.outstanding === 0) void this.flush();
    };
    return {
      spend: (keyId, cost) =>
        new Promise<Spend | undefined>((resolve, reject) => {
          this.waiting.push({ keyId, cost, resolve, reject });
          arrive();
        }),
      done: arrive,
    };
  }

  private async flush(): Promise<void> {
    const byKey = new Map<string, Waiting[]>();
    for (const w of this.waiting) {
      const list = byKey.get(w.keyId);
      if (list) list.push(w);
      else byKey.set(w.keyId, [w]);
    }
    const grouped: Waiting[][] = [];
    const sequential: Waiting[][] = [];
    for (const list of byKey.values()) {
      (list.every((w) => w.cost === list[0]?.cost) ? grouped : sequential).push(list);
    }
    await Promise.all([this.spendGroups(grouped), ...sequential.map((list) => this.spendInOrder(list))]);
  }

  private async spendGroups(lists: Waiting[][]): Promise<void> {
    if (lists.length === 0) return;
    const groups: SpendGroup[] = lists.map((list) => ({
      keyId: list[0]!.keyId,
      cost: list[0]!.cost,
      count: list.length,
    }));
    try {
      const results = await this.deps.store.spendCreditsGroups(groups, this.deps.clock.now());
      lists.forEach((list, i) => {
        const result = results[i];
        const cost = groups[i]!.cost;
        list.forEach((w, j) => {
          if (result === undefined) w.resolve(undefined);
          else if (result.before === null) w.resolve({ spent: true, remaining: null });
          else if (j < result.granted) w.resolve({ spent: true, remaining: result.before - (j + 1) * cost });
          else w.resolve({ spent: false, remaining: result.before - result.granted * cost });
        });
      });
    } catch (err) {
      for (const list of lists) for (const w of list) w.reject(err);
    }
  }

  private async spendInOrder(list: Waiting[]): Promise<void> {
    for (const w of list) {
      try {
        w.resolve(await this.deps.store.spendCredits(w.keyId, w.cost, this.deps.clock.now()));
      } catch (err) {
        w.reject(err);
      }
    }
  }
}
