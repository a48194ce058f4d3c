import { Gauge } from "prom-client";
import { type Clock, systemClock } from "./clock.ts";

/**
 * When each background loop last made progress, by loop name, as Unix seconds
 * (`latchkey_loop_last_progress_seconds{loop}`): a loop that stalls shows as a
 * time that stops moving while work waits, which an alert can watch.
 */
const lastProgress = new Gauge({
  name: "latchkey_loop_last_progress_seconds",
  help: "When each background loop last finished a unit of work or found none waiting (Unix seconds)",
  labelNames: ["loop"] as const,
});

/**
 * A background loop's record of its progress. A loop marks it each time it
 * finishes a unit of work (a delivery attempted, a batch written, a round
 * pruned) or looks and finds nothing waiting, so the time moves while the loop
 * is alive and stops only when it is stuck.
 */
export class LoopProgress {
  /** When the loop last made progress (the clock's milliseconds); 0 before its first. */
  lastAt = 0;
  /** Units of progress marked since the process started. */
  marks = 0;

  constructor(
    readonly loop: string,
    private readonly clock: Clock = systemClock,
  ) {}

  mark(): void {
    this.lastAt = this.clock.now();
    this.marks++;
    lastProgress.set({ loop: this.loop }, this.lastAt / 1000);
  }
}

/**
 * The progress of the loop named `loop`: one LoopProgress per name in a
 * process, so the all-in-one process's services and their tests see the same.
 */
export function loopProgress(loop: string, clock?: Clock): LoopProgress {
  let p = loops.get(loop);
  if (p === undefined) {
    p = new LoopProgress(loop, clock);
    loops.set(loop, p);
  }
  return p;
}
const loops = new Map<string, LoopProgress>();
