import type { Logger } from "@latchkey/runtime";

/** Most leak reports waiting at once in one instance; past it a report is refused as busy (docs/limits.md). */
export const MAX_PENDING_LEAK_REPORTS = 1_000;
/** Reports acted on at once: each is a lookup and, for a key, a transaction. */
const AT_ONCE = 2;

/**
 * keys.reportLeak's work, done after its answer: the answer then takes the same time whether the
 * reported string is a key or not (what is done for a key, a transaction, an event and a cache
 * invalidation, happens after it). Bounded: reports carry no workspace, so the bound is per
 * instance, and the gateway bounds each client's share of it (docs/security.md).
 */
export class LeakQueue {
  private readonly waiting: (() => Promise<unknown>)[] = [];
  private running = 0;
  private idle: (() => void)[] = [];

  constructor(
    private readonly log: Logger,
    private readonly max = MAX_PENDING_LEAK_REPORTS,
  ) {}

  /** Queues a report's work; false when MAX_PENDING_LEAK_REPORTS are waiting already. */
  add(task: () => Promise<unknown>): boolean {
    if (this.waiting.length >= this.max) return false;
    this.waiting.push(task);
    this.next();
    return true;
  }

  /** Resolves once nothing waits or runs (tests; close). */
  settled(): Promise<void> {
    if (this.running === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  get pending(): number {
    return this.waiting.length + this.running;
  }

  private next(): void {
    while (this.running < AT_ONCE && this.waiting.length > 0) {
      const task = this.waiting.shift()!;
      this.running++;
      task()
        .catch((err: unknown) => this.log.error({ err }, "a leak report could not be acted on"))
        .finally(() => {
          this.running--;
          this.next();
          if (this.running === 0 && this.waiting.length === 0) {
            for (const resolve of this.idle.splice(0)) resolve();
          }
        });
    }
  }
}
