import { describe, expect, it } from "vitest";
import { answeringEverything, harness } from "../testing/in-memory-gateway.ts";
import { OPERATIONS, routes } from "./routes/index.ts";

describe("the success envelope of every operation", () => {
  const h = harness(answeringEverything());

  it.each(OPERATIONS)("%s answers 200 with meta.requestId and data", async (operation) => {
    const res = await h.post(operation, routes[operation].example);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.meta).toEqual({ requestId: expect.stringMatching(/^req_[a-zA-Z0-9]{16}$/) });
    expect(res.body).toHaveProperty("data");
    expect(res.body.data).not.toBeNull();
    expect(["object"]).toContain(typeof res.body.data);
    expect(Object.keys(res.body).filter((k) => k !== "meta" && k !== "data" && k !== "pagination")).toEqual(
      [],
    );
  });
});
