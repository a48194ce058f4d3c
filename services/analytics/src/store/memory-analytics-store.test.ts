import { describe, expect, it } from "vitest";
import { analyticsStoreContract, query, verification } from "../../testing/analytics-store.suite.ts";
import { MemoryAnalyticsStore } from "./memory-analytics-store.ts";

analyticsStoreContract("MemoryAnalyticsStore", async () => new MemoryAnalyticsStore(), {
  dedupe: "requestId",
});

describe("MemoryAnalyticsStore", () => {
  it("forgets the oldest verifications past its bound", async () => {
    const store = new MemoryAnalyticsStore(2);
    await store.insertVerifications([verification(), verification(), verification()]);
    const rows = await store.verifications(query());
    expect(rows.reduce((n, r) => n + r.count, 0)).toBe(2);
  });
});
