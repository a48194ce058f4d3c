import type { Logger } from "./logger.ts";

export interface WaitOptions {
  log: Pick<Logger, "warn">;
  /** The wait after the first failure; each later one doubles, up to maxDelayMs. Default 250 ms. */
  firstDelayMs?: number;
  /** The longest wait between tries. Default 10 s. */
  maxDelayMs?: number;
  /** Aborting it stops the waiting: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** How to wait (tests pass one that does not). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * Whether an error is no outage but a refusal that trying again cannot change (another process
   * holding what this one needs, say): such an error is thrown at once. Default: none is.
   */
  permanent?: (err: unknown) => boolean;
}

/**
 * Tries `attempt` until it succeeds, waiting longer after each failure (doubling, with a fifth of
 * jitter so replicas that lost a dependency together do not return in step), and logs one line per
 * failed try naming the dependency, the error and the wait. A process starting before its
 * database, NATS or ClickHouse therefore waits for them, not ready meanwhile, instead of exiting
 * on the first timeout and leaving the restart to whoever watches it.
 */
export async function untilAvailable<T>(
  what: string,
  attempt: () => Promise<T>,
  options: WaitOptions,
): Promise<T> {
  const first = options.firstDelayMs ?? 250;
  const max = options.maxDelayMs ?? 10_000;
  const sleep = options.sleep ?? abortableSleep;
  for (let tries = 1; ; tries++) {
    options.signal?.throwIfAborted();
    try {
      return await attempt();
    } catch (err) {
      options.signal?.throwIfAborted();
      if (options.permanent?.(err)) throw err;
      const base = Math.min(max, first * 2 ** Math.min(tries - 1, 30));
      const retryInMs = Math.round(base * (0.8 + Math.random() * 0.2));
      options.log.warn(
        { dependency: what, tries, retryInMs, err: messageOf(err) },
        `${what} is not available yet; trying again`,
      );
      await sleep(retryInMs, options.signal);
    }
  }
}

function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener("abort", aborted, { once: true });
  });
}
