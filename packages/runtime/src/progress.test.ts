import { describe, expect, it } from "vitest";
import { TestClock } from "./clock.ts";
import { metricsText } from "./metrics.ts";
import { LoopProgress, loopProgress } from "./progress.ts";

describe("LoopProgress", () => {
  it("records the time of the last mark and counts the marks", () => {
    const clock = new TestClock(5_000);
    const p = new LoopProgress("test.records", clock);
    expect(p.lastAt).toBe(0);
    p.mark();
    clock.advance(2_000);
    p.mark();
    expect(p.lastAt).toBe(7_000);
    expect(p.marks).toBe(2);
  });

  it("is one per loop name in a process, and shows at /metrics in seconds", async () => {
    const clock = new TestClock(12_000);
    const p = loopProgress("test.metric", clock);
    expect(loopProgress("test.metric")).toBe(p);
    p.mark();
    const { body } = await metricsText();
    expect(body).toContain('latchkey_loop_last_progress_seconds{loop="test.metric"} 12');
  });
});
