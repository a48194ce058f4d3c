import { registry } from "@latchkey/runtime";
import { Counter, Gauge } from "prom-client";

/** Why a check that needed a new counter was denied: its workspace's bound, or the room the table has left. */
export type RefusalReason = "workspace" | "table";

/** Checks denied because their counter could not be created, served at /metrics. */
export const counterRefusals = new Counter({
  name: "latchkey_ratelimit_counter_refusals_total",
  help: "Rate limit checks denied because they needed a new counter and their workspace had no room (reason: workspace = its bound, table = the room the other workspaces leave)",
  labelNames: ["reason"] as const,
  registers: [registry],
});

/** The counters of every live SlidingWindows in the process (one, but tests and the replica test make several). */
const held = new Set<WeakRef<{ readonly size: number }>>();

new Gauge({
  name: "latchkey_ratelimit_counters",
  help: "Rate limit counters held in memory by this process",
  registers: [registry],
  collect() {
    let total = 0;
    for (const ref of held) {
      const windows = ref.deref();
      if (windows === undefined) held.delete(ref);
      else total += windows.size;
    }
    this.set(total);
  },
});

/** Adds a table's counters to the latchkey_ratelimit_counters gauge for as long as it lives. */
export function watchCounters(windows: { readonly size: number }): void {
  held.add(new WeakRef(windows));
}

/** Checks that failed because Redis (RATELIMIT_STORE=redis) did not answer in time or at all. */
export const storeFailures = new Counter({
  name: "latchkey_ratelimit_store_failures_total",
  help: "Rate limit checks answered UNAVAILABLE because Redis did not answer (down, unreachable or past RATELIMIT_REDIS_TIMEOUT_MS)",
  registers: [registry],
});
