import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.getApi answering 400", () => {
  const h = harness();

  it("names an apiId with characters outside letters, digits and underscore", async () => {
    const res = await h.post("apis.getApi", { apiId: "api-7Hq2" });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([
      { location: "/body/apiId", message: "apiId must match the pattern ^[a-zA-Z0-9_]+$." },
    ]);
  });

  it("names an apiId longer than 255 characters", async () => {
    const res = await h.post("apis.getApi", { apiId: `api_${"a".repeat(252)}` });
    expect(res.body.error.errors).toEqual([
      { location: "/body/apiId", message: "apiId must be at most 255 characters long." },
    ]);
  });
});
