import { describe, expect, it } from "vitest";
import { harness } from "./testing.ts";

describe("/metrics", () => {
  it("counts public requests by operation and status, and exposes process metrics", async () => {
    const h = harness({ keys: { createApi: () => ({ apiId: "api_metered" }) } });
    const key = h.rootKey("api.*.create_api");
    expect((await h.post("apis.createApi", { name: "metered" }, { key })).status).toBe(200);
    expect((await h.post("apis.createApi", { name: "x" }, { key })).status).toBe(400);
    const res = await h.get("/metrics");
    expect(res.status).toBe(200);
    const text = typeof res.body === "string" ? res.body : JSON.stringify(res.body);
    expect(text).toMatch(
      /latchkey_http_request_duration_seconds_count\{operation="apis.createApi",status="200"\} [1-9]/,
    );
    expect(text).toMatch(
      /latchkey_http_request_duration_seconds_count\{operation="apis.createApi",status="400"\} [1-9]/,
    );
    expect(text).toContain("process_cpu_seconds_total");
  });
});
