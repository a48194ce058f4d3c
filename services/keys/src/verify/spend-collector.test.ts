import { ErrorReason, errorDetailOf, LoopProgress, TestClock } from "@latchkey/runtime";
import { describe, expect, it, vi } from "vitest";
import type { GroupSpend, Spend, SpendGroup } from "../store/keys-store.ts";
import { MAX_QUEUED_SPENDS, MAX_STATEMENT_KEYS, SpendCollector, SpendQueue } from "./spend-collector.ts";

/** Balances by key id (null: unlimited), spent as the stores do; every statement recorded, optionally held. */
function balances(initial: Record<string, number | null>) {
  const balance = new Map(Object.entries(initial));
  const statements: SpendGroup[][] = [];
  let held: { promise: Promise<void>; release: () => void } | undefined;
  let failNext: Error | undefined;
  let out = 0;
  let maxOut = 0;
  return {
    statements,
    /** The most statements out at once so far. */
    maxOut: () => maxOut,
    balance: (keyId: string) => balance.get(keyId),
    /** Holds statements (once arrived) until release(). */
    hold() {
      let release = () => {};
      const promise = new Promise<void>((r) => {
        release = r;
      });
      held = { promise, release };
    },
    release() {
      const h = held;
      held = undefined;
      h?.release();
    },
    failNext(err: Error) {
      failNext = err;
    },
    store: {
      async spendCreditsGroups(groups: SpendGroup[]): Promise<(GroupSpend | undefined)[]> {
        statements.push(groups.map((g) => ({ ...g })));
        maxOut = Math.max(maxOut, ++out);
        const fail = failNext;
        failNext = undefined;
        // Yields once at least, as a database does, so statements asked meanwhile are out together.
        await (held?.promise ?? Promise.resolve());
        out--;
        if (fail) throw fail;
        return groups.map(({ keyId, cost, count }) => {
          const before = balance.get(keyId);
          if (before === undefined) return undefined;
          if (before === null) return { granted: count, before: null };
          const granted = cost === 0 ? count : Math.min(count, Math.floor(before / cost));
          balance.set(keyId, before - granted * cost);
          return { granted, before };
        });
      },
    },
  };
}

const WS = "ws_1";

/** Lets every queued microtask and timer of this turn run. */
const settle = () => new Promise((r) => setTimeout(r, 0));

/** One spend after another, as if each had its own statement: the expected answers. */
function oneByOne(start: number, costs: number[]): Spend[] {
  let balance = start;
  return costs.map((cost) => {
    if (balance >= cost) {
      balance -= cost;
      return { spent: true, remaining: balance };
    }
    return { spent: cost === 0, remaining: balance };
  });
}

describe("SpendQueue", () => {
  it("runs one statement at once: spends arriving meanwhile go together in the next, in arrival order", async () => {
    const db = balances({ key_a: 3, key_b: 10 });
    const queue = new SpendQueue(db.store, new TestClock());
    db.hold();
    const first = queue.spend(WS, "key_a", 1);
    await settle();
    expect(db.statements).toHaveLength(1);
    const later = [
      queue.spend(WS, "key_a", 1),
      queue.spend(WS, "key_b", 4),
      queue.spend(WS, "key_a", 1),
      queue.spend(WS, "key_a", 1),
      queue.spend(WS, "key_b", 4),
    ];
    await settle();
    // Still the first statement only: the others wait for it.
    expect(db.statements).toHaveLength(1);
    db.release();
    expect(await first).toEqual({ spent: true, remaining: 2 });
    expect(await Promise.all(later)).toEqual([
      { spent: true, remaining: 1 },
      { spent: true, remaining: 6 },
      { spent: true, remaining: 0 },
      { spent: false, remaining: 0 },
      { spent: true, remaining: 2 },
    ]);
    expect(db.statements).toEqual([
      [{ keyId: "key_a", cost: 1, count: 1 }],
      [
        { keyId: "key_a", cost: 1, count: 3 },
        { keyId: "key_b", cost: 4, count: 2 },
      ],
    ]);
    expect(queue.statements).toBe(2);
  });

  it("asks the next statement before it answers the spends of the one before", async () => {
    const db = balances({ key_a: 10 });
    const queue = new SpendQueue(db.store, new TestClock());
    const seen: string[] = [];
    const asked = db.store.spendCreditsGroups.bind(db.store);
    db.store.spendCreditsGroups = (groups) => {
      seen.push(`statement ${db.statements.length + 1}`);
      return asked(groups);
    };
    db.hold();
    const first = queue.spend(WS, "key_a", 1).then((s) => seen.push(`first answered, ${s?.remaining} left`));
    await settle();
    const second = queue
      .spend(WS, "key_a", 2)
      .then((s) => seen.push(`second answered, ${s?.remaining} left`));
    db.release();
    await Promise.all([first, second]);
    expect(seen).toEqual(["statement 1", "statement 2", "first answered, 9 left", "second answered, 7 left"]);
    // The last statement's spends are answered too, with nothing queued after them.
    expect(await queue.spend(WS, "key_a", 7)).toEqual({ spent: true, remaining: 0 });
  });

  it("with depth 2, asks a second statement while the first is out, and the spends after them together once one is decided", async () => {
    const db = balances({ key_a: 5 });
    const queue = new SpendQueue(db.store, new TestClock(), 2);
    db.hold();
    const first = queue.spend(WS, "key_a", 2);
    const second = queue.spend(WS, "key_a", 2);
    await settle();
    expect(db.statements).toHaveLength(2);
    const later = [queue.spend(WS, "key_a", 1), queue.spend(WS, "key_a", 1)];
    await settle();
    // Two out: the later spends wait for one of them.
    expect(db.statements).toHaveLength(2);
    db.release();
    // Decided in the order asked, as if one by one.
    expect(await Promise.all([first, second, ...later])).toEqual(oneByOne(5, [2, 2, 1, 1]));
    expect(db.statements.map((st) => st.map((g) => `${g.cost}x${g.count}`))).toEqual([
      ["2x1"],
      ["2x1"],
      ["1x2"],
    ]);
    expect(db.balance("key_a")).toBe(0);
    expect(db.maxOut()).toBe(2);
  });

  it("answers spends of unequal costs as one by one, a statement per change of cost", async () => {
    const db = balances({ key_a: 5 });
    const queue = new SpendQueue(db.store, new TestClock());
    const costs = [2, 2, 1, 3, 1, 0, 1];
    const answers = await Promise.all(costs.map((cost) => queue.spend(WS, "key_a", cost)));
    expect(answers).toEqual(oneByOne(5, costs));
    expect(db.balance("key_a")).toBe(0);
    // One at a time: a store of many connections need not decide statements in the order asked.
    expect(db.maxOut()).toBe(1);
    // Runs [2,2] [1] [3] [1] [0] [1]; the first spend went alone before the others queued.
    expect(db.statements.map((s) => s.map((g) => `${g.cost}x${g.count}`))).toEqual([
      ["2x1"],
      ["2x1"],
      ["1x1"],
      ["3x1"],
      ["1x1"],
      ["0x1"],
      ["1x1"],
    ]);
  });

  it("puts the n-th run of one cost of every key in the n-th statement", async () => {
    const db = balances({ key_a: 4, key_b: 4 });
    const queue = new SpendQueue(db.store, new TestClock());
    db.hold();
    const first = queue.spend(WS, "key_b", 0);
    await settle();
    const spends = [
      ["key_a", 1],
      ["key_b", 2],
      ["key_a", 1],
      ["key_a", 3],
      ["key_b", 2],
      ["key_b", 2],
    ] as const;
    const answers = Promise.all(spends.map(([keyId, cost]) => queue.spend(WS, keyId, cost)));
    db.release();
    await first;
    expect(await answers).toEqual([
      { spent: true, remaining: 3 },
      { spent: true, remaining: 2 },
      { spent: true, remaining: 2 },
      { spent: false, remaining: 2 },
      { spent: true, remaining: 0 },
      { spent: false, remaining: 0 },
    ]);
    expect(db.statements.slice(1)).toEqual([
      [
        { keyId: "key_a", cost: 1, count: 2 },
        { keyId: "key_b", cost: 2, count: 3 },
      ],
      [{ keyId: "key_a", cost: 3, count: 1 }],
    ]);
  });

  it("rejects every spend of a failed statement with its error and goes on with the ones queued after", async () => {
    const db = balances({ key_a: 10, key_b: 10 });
    const queue = new SpendQueue(db.store, new TestClock());
    db.hold();
    db.failNext(new Error("connection reset"));
    const failed = [queue.spend(WS, "key_a", 1), queue.spend(WS, "key_b", 1)];
    // The first spend started the statement alone; hold it so that the next ones queue behind it.
    await settle();
    const queued = [queue.spend(WS, "key_a", 1), queue.spend(WS, "key_b", 1)];
    db.release();
    const outcomes = await Promise.allSettled(failed);
    expect(outcomes[0]).toEqual({ status: "rejected", reason: new Error("connection reset") });
    // The second went with the statement after the failed one.
    expect(await outcomes[1]).toEqual({ status: "fulfilled", value: { spent: true, remaining: 9 } });
    expect(await Promise.all(queued)).toEqual([
      { spent: true, remaining: 9 },
      { spent: true, remaining: 8 },
    ]);
  });

  it("rejects every waiter of a failed statement that holds many spends", async () => {
    const db = balances({ key_a: 10, key_b: 10 });
    const queue = new SpendQueue(db.store, new TestClock());
    db.hold();
    const first = queue.spend(WS, "key_a", 1);
    await settle();
    db.failNext(new Error("all of them"));
    // Two statements: cost 1 for both keys (fails), then key_a's cost 2 (goes).
    const next = [queue.spend(WS, "key_a", 1), queue.spend(WS, "key_b", 1), queue.spend(WS, "key_a", 2)];
    db.release();
    expect(await first).toEqual({ spent: true, remaining: 9 });
    const outcomes = await Promise.allSettled(next);
    expect(outcomes).toEqual([
      { status: "rejected", reason: new Error("all of them") },
      { status: "rejected", reason: new Error("all of them") },
      { status: "fulfilled", value: { spent: true, remaining: 7 } },
    ]);
    expect(db.balance("key_a")).toBe(7);
    expect(db.balance("key_b")).toBe(10);
  });

  it("answers undefined for a key that is gone and unlimited for a key without a balance", async () => {
    const db = balances({ key_free: null });
    const queue = new SpendQueue(db.store, new TestClock());
    expect(await Promise.all([queue.spend(WS, "key_gone", 1), queue.spend(WS, "key_free", 7)])).toEqual([
      undefined,
      { spent: true, remaining: null },
    ]);
  });

  it.each([1, 2])(
    "never overspends and grants in arrival order under many concurrent batches (depth %i)",
    async (depth) => {
      const start = { key_a: 500, key_b: 333 };
      const db = balances(start);
      const queue = new SpendQueue(db.store, new TestClock(), depth);
      const batches = Array.from({ length: 60 }, async (_, b) => {
        const items = 30;
        const collector = new SpendCollector(queue, items);
        // Items arrive out of order and some never spend, as a batch's do.
        const order = Array.from({ length: items }, (_, i) => (i * 7 + b) % items);
        const arrived: { keyId: "key_a" | "key_b"; answer: Promise<Spend | undefined> }[] = [];
        for (const i of order) {
          const keyId = i % 2 === 0 ? "key_a" : "key_b";
          if (i % 5 === 4) collector.done(i);
          else arrived.push({ keyId, answer: collector.spend(i, WS, keyId, 1) });
          if (i % 3 === 0) await Promise.resolve();
        }
        return Promise.all(arrived.map(async ({ keyId, answer }) => ({ keyId, spend: await answer })));
      });
      const answers = await Promise.all(batches);
      for (const keyId of ["key_a", "key_b"] as const) {
        expect(db.balance(keyId)).toBe(0);
        const spent = answers.flat().filter((a) => a.keyId === keyId && a.spend?.spent);
        // Every credit went to exactly one spend: the balances they left are start-1 .. 0, each once.
        expect(spent.map((a) => a.spend?.remaining).sort((x, y) => (y ?? 0) - (x ?? 0))).toEqual(
          Array.from({ length: start[keyId] }, (_, i) => start[keyId] - 1 - i),
        );
        // Within a batch, in arrival order: granted ones first, each leaving less than the one before.
        for (const batch of answers) {
          const mine = batch.filter((a) => a.keyId === keyId).map((a) => a.spend);
          const firstRefused = mine.findIndex((s) => !s?.spent);
          if (firstRefused >= 0) expect(mine.slice(firstRefused).every((s) => !s?.spent)).toBe(true);
          const left = mine.filter((s) => s?.spent).map((s) => s?.remaining ?? 0);
          expect(left).toEqual([...left].sort((x, y) => y - x));
        }
      }
      // Fewer statements than batches: those arriving during a statement shared the next.
      expect(queue.statements).toBeLessThan(60);
    },
  );
});

describe("SpendQueue, shared by workspaces and saturated", () => {
  it("holds at most 10,000 waiting spends of a workspace (the rest UNAVAILABLE at once), decides at most 1,000 keys a statement, and another workspace's spend goes in the next", async () => {
    const keys: Record<string, number> = { key_victim: 100 };
    for (let k = 0; k < 20_000; k++) keys[`key_a${k}`] = 1_000;
    const db = balances(keys);
    const progress = new LoopProgress("test.credit-spends");
    const queue = new SpendQueue(db.store, new TestClock(), 1, 0.1, progress);
    db.hold();
    const first = queue.spend("ws_attacker", "key_a0", 1);
    await settle();
    // 50,000 spends over 20,000 keys while the first statement is out.
    const flood = Array.from({ length: 50_000 }, (_, i) =>
      queue.spend("ws_attacker", `key_a${i % 20_000}`, 1),
    );
    const victim = queue.spend("ws_victim", "key_victim", 1);
    expect(queue.waiting("ws_attacker")).toBe(MAX_QUEUED_SPENDS);
    expect(queue.waiting("ws_victim")).toBe(1);
    db.release();
    expect(await first).toEqual({ spent: true, remaining: 999 });
    expect(await victim).toEqual({ spent: true, remaining: 99 });
    // The victim's spend went in the statement right after the one that was out.
    expect(db.statements[1]!.map((g) => g.keyId)).toContain("key_victim");
    const outcomes = await Promise.allSettled(flood);
    const refused = outcomes.filter((o) => o.status === "rejected");
    expect(refused).toHaveLength(50_000 - MAX_QUEUED_SPENDS);
    expect(errorDetailOf((refused[0] as PromiseRejectedResult).reason)?.reason).toBe(ErrorReason.UNAVAILABLE);
    // Every statement decides at most 1,000 keys; the 10,000 accepted spends of 10,000 keys take 10 more.
    expect(Math.max(...db.statements.map((s) => s.length))).toBe(MAX_STATEMENT_KEYS);
    expect(db.statements).toHaveLength(12);
    expect(progress.marks).toBe(12);
    // Exact: each accepted spend took one credit of its own key, no more.
    const spent = outcomes.filter((o) => o.status === "fulfilled" && o.value?.spent === true);
    expect(spent).toHaveLength(MAX_QUEUED_SPENDS);
    let credits = 0;
    for (let k = 0; k < 20_000; k++) credits += 1_000 - db.balance(`key_a${k}`)!;
    expect(credits).toBe(MAX_QUEUED_SPENDS + 1);
    expect(db.balance("key_victim")).toBe(99);
    queue.close();
  });

  it("shares a statement's keys between the workspaces waiting, turning their order, so none waits behind another's changes of cost", async () => {
    const db = balances({ key_a: 1_000_000, key_b1: 100, key_b2: 100, key_c1: 100, key_c2: 100 });
    const queue = new SpendQueue(
      db.store,
      new TestClock(),
      1,
      0.1,
      new LoopProgress("test.credit-spends.turns"),
      { queued: 10_000, keys: 2 },
    );
    db.hold();
    const first = queue.spend("ws_a", "key_a", 1);
    await settle();
    // Costs that change on every spend: one statement per spend of that key.
    const flood = Array.from({ length: 1_000 }, (_, i) => queue.spend("ws_a", "key_a", 1 + (i % 2)));
    const others = ["ws_b", "ws_c"].flatMap((ws) =>
      [1, 2].map((k) => queue.spend(ws, `key_${ws.slice(3)}${k}`, 1)),
    );
    db.release();
    await first;
    expect(await Promise.all(others)).toEqual(Array(4).fill({ spent: true, remaining: 99 }));
    // Two keys a statement, one of each workspace in turn; the workspaces served go to the back.
    const keysOf = (i: number) => db.statements[i]!.map((g) => `${g.keyId}/${g.cost}`);
    expect([1, 2, 3].map(keysOf)).toEqual([
      ["key_a/1", "key_b1/1"],
      ["key_c1/1", "key_a/2"],
      ["key_b2/1", "key_c2/1"],
    ]);
    const answers = await Promise.all(flood);
    expect(answers.filter((a) => a?.spent)).toHaveLength(1_000);
    expect(db.balance("key_a")).toBe(1_000_000 - 1 - 1_500);
    expect(db.statements).toHaveLength(1 + 1_000 + 1);
    queue.close();
  });

  it("marks progress once a second while idle", async () => {
    vi.useFakeTimers();
    try {
      const progress = new LoopProgress("test.credit-spends.idle");
      const queue = new SpendQueue(balances({}).store, new TestClock(), 1, 0.1, progress);
      await vi.advanceTimersByTimeAsync(3_000);
      expect(progress.marks).toBe(3);
      queue.close();
      await vi.advanceTimersByTimeAsync(3_000);
      expect(progress.marks).toBe(3);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("SpendCollector", () => {
  it("submits a batch's spends together once every item has arrived, in arrival order", async () => {
    const db = balances({ key_a: 2 });
    const queue = new SpendQueue(db.store, new TestClock());
    const collector = new SpendCollector(queue, 4);
    const third = collector.spend(2, WS, "key_a", 1);
    const first = collector.spend(0, WS, "key_a", 1);
    collector.done(1);
    await settle();
    expect(db.statements).toHaveLength(0);
    const last = collector.spend(3, WS, "key_a", 1);
    // An item's done after its spend changes nothing.
    collector.done(3);
    expect(await Promise.all([third, first, last])).toEqual([
      { spent: true, remaining: 1 },
      { spent: true, remaining: 0 },
      { spent: false, remaining: 0 },
    ]);
    expect(db.statements).toEqual([[{ keyId: "key_a", cost: 1, count: 3 }]]);
  });

  it("runs no statement for a batch without spends", async () => {
    const db = balances({});
    const collector = new SpendCollector(new SpendQueue(db.store, new TestClock()), 2);
    collector.done(0);
    collector.done(1);
    await settle();
    expect(db.statements).toHaveLength(0);
  });
});
