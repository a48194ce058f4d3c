import { describe, expect, it } from "vitest";
import { dueRefill, effectiveRemaining, latestRefillAt } from "./refills.ts";

const utc = (y: number, m: number, d: number, h = 0, min = 0) => Date.UTC(y, m - 1, d, h, min);
const monthly = (day: number) => ({ interval: "monthly" as const, amount: 100, day });
const daily = { interval: "daily" as const, amount: 100, day: null };

describe("latestRefillAt", () => {
  it("is 00:00 UTC of the same day for daily refills", () => {
    expect(latestRefillAt(daily, utc(2026, 3, 15, 13, 45))).toBe(utc(2026, 3, 15));
    expect(latestRefillAt(daily, utc(2026, 3, 15))).toBe(utc(2026, 3, 15));
    expect(latestRefillAt(daily, utc(2026, 3, 15) - 1)).toBe(utc(2026, 3, 14));
  });

  it("is the refill day of this month once it has come, else of the month before", () => {
    expect(latestRefillAt(monthly(15), utc(2026, 3, 20))).toBe(utc(2026, 3, 15));
    expect(latestRefillAt(monthly(15), utc(2026, 3, 15))).toBe(utc(2026, 3, 15));
    expect(latestRefillAt(monthly(15), utc(2026, 3, 14, 23, 59))).toBe(utc(2026, 2, 15));
    expect(latestRefillAt(monthly(1), utc(2026, 1, 1, 0, 1))).toBe(utc(2026, 1, 1));
    expect(latestRefillAt(monthly(1), utc(2026, 1, 1) - 1)).toBe(utc(2025, 12, 1));
  });

  it("falls on the month's last day when the refill day is past its end", () => {
    // Day 31 in February: the 28th in a common year, the 29th in a leap year.
    expect(latestRefillAt(monthly(31), utc(2026, 2, 28, 1))).toBe(utc(2026, 2, 28));
    expect(latestRefillAt(monthly(31), utc(2026, 2, 27, 23))).toBe(utc(2026, 1, 31));
    expect(latestRefillAt(monthly(31), utc(2024, 2, 28, 23))).toBe(utc(2024, 1, 31));
    expect(latestRefillAt(monthly(31), utc(2024, 2, 29))).toBe(utc(2024, 2, 29));
    expect(latestRefillAt(monthly(30), utc(2026, 3, 1))).toBe(utc(2026, 2, 28));
    expect(latestRefillAt(monthly(31), utc(2026, 4, 30, 8))).toBe(utc(2026, 4, 30));
    expect(latestRefillAt(monthly(31), utc(2026, 5, 30, 8))).toBe(utc(2026, 4, 30));
    expect(latestRefillAt(monthly(31), utc(2026, 5, 31))).toBe(utc(2026, 5, 31));
  });
});

describe("dueRefill", () => {
  const created = utc(2026, 1, 10, 12);

  it("is due at the first refill instant after creation, not before", () => {
    const key = { refill: daily, lastRefillAt: null, createdAt: created };
    expect(dueRefill(key, utc(2026, 1, 10, 23, 59))).toBeNull();
    expect(dueRefill(key, utc(2026, 1, 11))).toBe(utc(2026, 1, 11));
  });

  it("is due at most once per period", () => {
    const key = { refill: monthly(31), lastRefillAt: utc(2026, 2, 28), createdAt: created };
    expect(dueRefill(key, utc(2026, 2, 28, 5))).toBeNull();
    expect(dueRefill(key, utc(2026, 3, 30, 23))).toBeNull();
    expect(dueRefill(key, utc(2026, 3, 31))).toBe(utc(2026, 3, 31));
  });

  it("catches up after downtime with the latest missed period only", () => {
    const key = { refill: daily, lastRefillAt: utc(2026, 1, 11), createdAt: created };
    expect(dueRefill(key, utc(2026, 1, 20, 9))).toBe(utc(2026, 1, 20));
    const monthlyKey = { refill: monthly(1), lastRefillAt: utc(2026, 1, 1), createdAt: created };
    expect(dueRefill(monthlyKey, utc(2026, 5, 17))).toBe(utc(2026, 5, 1));
  });

  it("is never due without a schedule", () => {
    expect(dueRefill({ refill: null, lastRefillAt: null, createdAt: 0 }, utc(2030, 1, 1))).toBeNull();
  });
});

describe("effectiveRemaining", () => {
  it("shows a due refill's amount, the stored balance otherwise", () => {
    const key = { remaining: 3, refill: daily, lastRefillAt: null, createdAt: utc(2026, 1, 10, 12) };
    expect(effectiveRemaining(key, utc(2026, 1, 10, 18))).toBe(3);
    expect(effectiveRemaining(key, utc(2026, 1, 11, 0, 1))).toBe(100);
    expect(effectiveRemaining({ ...key, remaining: null, refill: null }, utc(2026, 1, 11))).toBeNull();
  });
});
