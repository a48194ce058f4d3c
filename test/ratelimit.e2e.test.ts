import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./testing/process-stack.ts";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

describe("standalone rate limits through the gateway (separate processes)", () => {
  it("lets exactly L of N concurrent checks through, under both path spellings", async () => {
    const check = { namespace: "e2e-exact", identifier: "user_1", limit: 10, duration: 60_000 };
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => stack.call(i % 2 ? "ratelimits.limit" : "ratelimit.limit", check)),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.filter((a) => a.body.data.success)).toHaveLength(10);
    expect(answers.filter((a) => !a.body.data.success).every((a) => a.body.data.remaining === 0)).toBe(true);
  });

  it("applies an override at the next check, exact beating wildcard, and lists overrides in both shapes", async () => {
    const check = { namespace: "e2e-overrides", identifier: "vip_1", limit: 1, duration: 60_000 };
    expect((await stack.call("ratelimits.limit", check)).body.data.success).toBe(true);
    expect((await stack.call("ratelimits.limit", check)).body.data.success).toBe(false);

    const wildcard = await stack.call("ratelimits.setOverride", {
      namespace: "e2e-overrides",
      identifier: "vip_*",
      limit: 100,
      duration: 60_000,
    });
    expect(wildcard.status).toBe(200);
    const lifted = await stack.call("ratelimits.limit", check);
    expect(lifted.body.data).toMatchObject({
      success: true,
      limit: 100,
      overrideId: wildcard.body.data.overrideId,
    });

    const exact = await stack.call("ratelimit.setOverride", {
      namespace: "e2e-overrides",
      identifier: "vip_1",
      limit: 0,
      duration: 60_000,
    });
    const banned = await stack.call("ratelimits.limit", check);
    expect(banned.body.data).toMatchObject({
      success: false,
      limit: 0,
      overrideId: exact.body.data.overrideId,
    });

    const contract = await stack.call("ratelimits.listOverrides", { namespace: "e2e-overrides", limit: 1 });
    expect(contract.body.data.overrides).toHaveLength(1);
    expect(typeof contract.body.data.cursor).toBe("string");
    const reference = await stack.call("ratelimit.listOverrides", { namespace: "e2e-overrides" });
    expect(reference.body.data).toHaveLength(2);
    expect(reference.body.pagination).toEqual({ hasMore: false });

    expect(
      (await stack.call("ratelimits.deleteOverride", { namespace: "e2e-overrides", identifier: "vip_1" }))
        .body.data,
    ).toEqual({});
    const missing = await stack.call("ratelimits.getOverride", {
      namespace: "e2e-overrides",
      identifier: "vip_1",
    });
    expect(missing.status).toBe(404);
  });
});
