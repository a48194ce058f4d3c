import { TestClock } from "@latchkey/runtime";
import { type CounterCheck, SlidingWindows } from "../src/limiter/sliding-windows.ts";

/**
 * CPU per SlidingWindows.apply of one check, the limiter's share of every
 * rate-limit check: one hot identifier, 10,000 identifiers in turn (all held),
 * and 10,000 identifiers of 1 s windows that roll as the clock moves. Run:
 *   node --import tsx services/ratelimit/bench/sliding-windows.ts
 */
const N = 2_000_000;
const clock = new TestClock(Date.UTC(2026, 0, 1, 12));
const windows = new SlidingWindows(clock);
const keys = Array.from({ length: 10_000 }, (_, i) => `ws_${i % 10}\u001frlns_x\u001fuser_${i}`);
const group = (key: string, duration: number): CounterCheck[] => [{ key, limit: 1e9, duration, cost: 1 }];
const hot = group(keys[0]!, 60_000);
const spread = keys.map((key) => group(key, 60_000));
const rolling = keys.map((key) => group(key, 1000));

const cases: [string, (i: number) => void][] = [
  ["one identifier", () => windows.apply(hot)],
  ["10,000 identifiers", (i) => windows.apply(spread[i % 10_000]!)],
  [
    "10,000 identifiers rolling",
    (i) => {
      if (i % 10_000 === 0) clock.advance(1000);
      windows.apply(rolling[i % 10_000]!);
    },
  ],
];
for (const [name, run] of cases) {
  for (let i = 0; i < N / 10; i++) run(i);
  const before = process.cpuUsage();
  for (let i = 0; i < N; i++) run(i);
  const used = process.cpuUsage(before);
  process.stdout.write(`${name}: ${(((used.user + used.system) * 1000) / N).toFixed(0)} ns CPU per check\n`);
}
