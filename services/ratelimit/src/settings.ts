import { env } from "@latchkey/runtime";

/**
 * The bounds on counters held in memory (README "Memory and bounds"), read
 * from the environment; a value that is not an integer of at least 1 stops the
 * start. The defaults are those of limiter/sliding-windows.ts.
 */
export function counterBoundsFromEnv(): { maxCounters: number; maxCountersPerWorkspace: number } {
  return {
    maxCounters: env.int("RATELIMIT_MAX_COUNTERS", 1_000_000, 1),
    maxCountersPerWorkspace: env.int("RATELIMIT_MAX_COUNTERS_PER_WORKSPACE", 250_000, 1),
  };
}
