import { createWorkspace } from "@latchkey/keys";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { analyticsOptions, type Stack, startStack } from "./testing/process-stack.ts";

// Verifications through the gateway -> KeyVerified on JetStream -> the analytics consumer -> ClickHouse -> the query.
const analytics = analyticsOptions("analytics_e2e");
let stack: Stack;
let rootKey: string;

beforeAll(async () => {
  stack = await startStack(analytics.options);
  // A workspace of its own: other tests' verifications on the shared stream are not counted here.
  rootKey = (await createWorkspace(stack.db.sql, `analytics-${analytics.suffix}`)).rootKey;
});
afterAll(async () => {
  await stack?.stop();
  await analytics.drop();
});

const call = (operation: string, body: unknown) => stack.call(operation, body, rootKey);

async function totals(body: Record<string, unknown>, expected: number) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await call("analytics.getVerifications", body);
    expect(res.status).toBe(200);
    const total = res.body.data.reduce((n: number, b: { total: number }) => n + b.total, 0);
    if (total >= expected || Date.now() > deadline) return res.body.data;
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe("verification analytics end to end", () => {
  it("counts N tagged verifications exactly, split by outcome and filtered by tag", async () => {
    const start = Date.now() - 1_000;
    const apiId = (await call("apis.createApi", { name: "analytics" })).body.data.apiId;
    const { key } = (await call("keys.createKey", { apiId, credits: { remaining: 20 } })).body.data;
    const codes: string[] = [];
    for (let i = 0; i < 30; i++) {
      const tags = i % 3 === 0 ? ["env:dev"] : ["env:prod", "region:eu"];
      codes.push((await call("keys.verifyKey", { key, tags })).body.data.code);
    }
    expect(codes.filter((c) => c === "VALID")).toHaveLength(20);
    const end = Date.now() + 1_000;

    const all = await totals({ start, end, apiId, granularity: "hour" }, 30);
    const sum = (field: string) =>
      all.reduce((n: number, b: Record<string, number>) => n + (b[field] ?? 0), 0);
    expect(sum("total")).toBe(30);
    expect(sum("valid")).toBe(20);
    expect(sum("usageExceeded")).toBe(10);

    const prodEu = await totals(
      { start, end, apiId, tags: ["env:prod", "region:eu"], granularity: "day" },
      20,
    );
    expect(prodEu.reduce((n: number, b: { total: number }) => n + b.total, 0)).toBe(20);

    const byOutcome = await totals({ start, end, apiId, granularity: "day", groupBy: "outcome" }, 30);
    const counts = Object.fromEntries(
      byOutcome.map((b: { outcome: string; total: number }) => [b.outcome, b.total]),
    );
    expect(counts).toEqual({ VALID: 20, USAGE_EXCEEDED: 10 });
  });
});
