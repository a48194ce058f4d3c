import { TestClock } from "@latchkey/runtime";
import { counterKey } from "../src/checks.ts";
import { SlidingWindows } from "../src/limiter/sliding-windows.ts";

/**
 * Memory per counter: fills a SlidingWindows with N counters (one check each,
 * as a flood of new identifiers would) and reports the heap they hold, after
 * a full garbage collection. Keys are built as the service builds them (a
 * workspace id, a namespace id and the identifier, joined in checks.ts). Run:
 *   node --expose-gc --import tsx services/ratelimit/bench/memory.ts
 * N (1,000,000), WORKSPACES (10), IDENTIFIER (length of the identifier, 12),
 * CHAR (what the identifier is padded with, "0"; one beyond Latin-1 makes
 * two-byte strings), DURATION (window ms, 86,400,000). Prints the heap per
 * counter beside what the bounds count (counterBytes).
 */
const N = Number(process.env["N"] ?? 1_000_000);
const WORKSPACES = Number(process.env["WORKSPACES"] ?? 10);
const IDENTIFIER = Number(process.env["IDENTIFIER"] ?? 12);
const DURATION = Number(process.env["DURATION"] ?? 86_400_000);
const CHAR = process.env["CHAR"] ?? "0";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");
const settle = () => {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage();
};

const id16 = (prefix: string, i: number) => `${prefix}_${String(i).padStart(16, "x")}`;
const workspaces = Array.from({ length: WORKSPACES }, (_, w) => id16("ws", w));
const namespace = id16("rlns", 1);
// Room for all N in one workspace: one may fill at most half of the table (see sliding-windows.ts).
const windows = new SlidingWindows(new TestClock(Date.UTC(2026, 0, 1, 12)), {
  maxCounters: 2 * N,
  maxCountersPerWorkspace: N,
  maxBytes: Number.MAX_SAFE_INTEGER,
});

const before = settle();
const started = performance.now();
for (let i = 0; i < N; i++) {
  const identifier = `u${String(i).padStart(IDENTIFIER - 1, CHAR)}`;
  windows.apply([
    {
      key: counterKey(workspaces[i % WORKSPACES]!, namespace, identifier),
      limit: 100,
      duration: DURATION,
      cost: 1,
    },
  ]);
}
const elapsed = performance.now() - started;
const after = settle();
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const heap = after.heapUsed - before.heapUsed;
process.stdout.write(
  `${JSON.stringify({
    counters: windows.size,
    workspaces: WORKSPACES,
    keyLength: counterKey(workspaces[0]!, namespace, "u".repeat(IDENTIFIER)).length,
    heap: mb(heap),
    bytesPerCounter: Math.round(heap / windows.size),
    counted: Math.round(windows.bytes / windows.size),
    rss: mb(after.rss),
    µsPerNewCounter: ((elapsed * 1000) / N).toFixed(2),
  })}\n`,
);
