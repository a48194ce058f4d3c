import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/analytics.getRatelimits answering 400", () => {
  const h = harness({ analytics: { getRatelimits: () => ({ buckets: [] }) } });

  it.each([
    [{}, "/start"],
    [{ start: 1 }, "/end"],
    [{ start: 1, end: 2, groupBy: "outcome" }, "/groupBy"],
    [{ start: 1, end: 2, granularity: "minute" }, "/granularity"],
    [{ start: 1, end: 2, apiId: "api_1" }, "/apiId"],
    [{ query: "" }, "/query"],
    [{ query: "x".repeat(10_001) }, "/query"],
    [{ start: 1, end: 2, identifier: "" }, "/identifier"],
  ])("refuses %j naming %s", async (body, location) => {
    const res = await h.post("analytics.getRatelimits", body);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.error)).toContain(location.slice(1));
  });
});
