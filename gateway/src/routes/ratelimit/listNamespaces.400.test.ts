import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/ratelimits.listNamespaces answering 400", () => {
  const h = harness({ ratelimit: { listNamespaces: () => ({ namespaces: [] }) } });
  it.each([
    [{ limit: 0 }, "limit"],
    [{ limit: 101 }, "limit"],
    [{ cursor: "" }, "cursor"],
    [{ namespace: "x" }, "namespace"],
  ])("refuses %j naming %s", async (body, field) => {
    const res = await h.post("ratelimits.listNamespaces", body);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.error)).toContain(field);
  });
});
