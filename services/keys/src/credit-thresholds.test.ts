import { describe, expect, it } from "vitest";
import {
  announceThresholds,
  MAX_CREDIT_THRESHOLDS,
  thresholdCredits,
  validThresholds,
} from "./credit-thresholds.ts";

describe("credit thresholds", () => {
  it("keeps whole percentages 0 to 100, highest first without repeats; empty is none", () => {
    expect(validThresholds([20, 50, 0, 20], "/creditThresholds")).toEqual([50, 20, 0]);
    expect(validThresholds([], "/creditThresholds")).toBeNull();
    expect(() => validThresholds([50, 100.5], "/creditThresholds")).toThrow(/whole percentage from 0 to 100/);
    expect(() => validThresholds([-1], "/x")).toThrow(/0 to 100/);
    expect(() => validThresholds([101], "/x")).toThrow(/0 to 100/);
    expect(() =>
      validThresholds(
        Array.from({ length: MAX_CREDIT_THRESHOLDS + 1 }, (_, i) => i),
        "/x",
      ),
    ).toThrow(/at most 10/);
    expect(
      validThresholds(
        Array.from({ length: MAX_CREDIT_THRESHOLDS }, (_, i) => i * 10),
        "/x",
      ),
    ).toHaveLength(10);
  });

  it("stands for the baseline's share rounded down, a binary fraction's hair counting as the whole", () => {
    expect(thresholdCredits(100, 50)).toBe(50);
    expect(thresholdCredits(7, 50)).toBe(3);
    expect(thresholdCredits(100, 7)).toBe(7);
    expect(thresholdCredits(1000, 0)).toBe(0);
    expect(thresholdCredits(3, 100)).toBe(3);
  });

  it("announces each threshold a spend took the balance to or below, and none it stayed above or was below already", () => {
    const seen: [number, number, number][] = [];
    const events = {
      thresholdCrossed: (_k: unknown, remaining: number, percent: number, credits: number) =>
        seen.push([percent, credits, remaining]),
    } as never;
    const key = { id: "key_1", workspaceId: "ws_1", apiId: "api_1" };
    const spend = (remaining: number) => ({ spent: true, remaining, baseline: 100, period: 1 });
    announceThresholds(events, key, [50, 20, 0], spend(60), 10, 0); // 70 → 60
    expect(seen).toEqual([]);
    announceThresholds(events, key, [50, 20, 0], spend(20), 40, 0); // 60 → 20: 50 and 20
    expect(seen).toEqual([
      [50, 50, 20],
      [20, 20, 20],
    ]);
    announceThresholds(events, key, [50, 20, 0], spend(10), 10, 0); // 20 → 10: below both already
    announceThresholds(
      events,
      key,
      [50, 20, 0],
      { spent: false, remaining: 10, baseline: 100, period: 1 },
      20,
      0,
    );
    expect(seen).toHaveLength(2);
    announceThresholds(events, key, [50, 20, 0], spend(0), 10, 0);
    expect(seen.at(-1)).toEqual([0, 0, 0]);
    // No baseline (a key never given a balance) or no period: nothing to measure against.
    announceThresholds(events, key, [100], { spent: true, remaining: 0, baseline: null, period: 1 }, 1, 0);
    announceThresholds(events, key, [100], { spent: true, remaining: 0 }, 1, 0);
    expect(seen).toHaveLength(3);
  });
});
