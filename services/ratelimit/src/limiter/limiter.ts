import type { CounterCheck, CounterOutcome, SlidingWindows } from "./sliding-windows.ts";

/**
 * Where checks are counted. One replica counts in its own memory; several
 * replicas share one budget by letting each counter's owner count it (see
 * peer-limiter.ts). Both answer the same way, so the RPCs do not know which.
 */
export interface Limiter {
  /** Each group is checked and counted all or nothing; one outcome per check, in order. */
  apply(groups: readonly (readonly CounterCheck[])[]): Promise<CounterOutcome[][]>;
  close(): Promise<void>;
}

/** The zero-config default: every counter lives in this process. */
export class LocalLimiter implements Limiter {
  constructor(private readonly windows: SlidingWindows) {}

  apply(groups: readonly (readonly CounterCheck[])[]): Promise<CounterOutcome[][]> {
    return Promise.resolve(groups.map((g) => this.windows.apply(g)));
  }

  async close(): Promise<void> {}
}
