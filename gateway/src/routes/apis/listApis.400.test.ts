import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.listApis answering 400", () => {
  const h = harness({ keys: { listApis: () => ({ apis: [] }) } });
  it.each([
    [{ limit: 0 }, "limit"],
    [{ limit: 101 }, "limit"],
    [{ cursor: 5 }, "cursor"],
    [{ apiId: "api_1" }, "apiId"],
  ])("refuses %j naming %s", async (body, field) => {
    const res = await h.post("apis.listApis", body);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.error)).toContain(field);
  });
});
