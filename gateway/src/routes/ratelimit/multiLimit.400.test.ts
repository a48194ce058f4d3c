import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

const check = { namespace: "email", identifier: "user_1", limit: 5, duration: 60_000 };

describe.each(["ratelimits.multiLimit", "ratelimit.multiLimit"])("POST /v2/%s answering 400", (operation) => {
  const h = harness();

  it("refuses an object where the array of checks belongs", async () => {
    const res = await h.post(operation, check);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([{ location: "/body", message: "the body must be an array." }]);
  });

  it("refuses an empty array", async () => {
    const res = await h.post(operation, []);
    expect(res.body.error.errors).toEqual([
      { location: "/body", message: "the body must hold at least 1 item." },
    ]);
  });

  it("refuses more than 100 checks", async () => {
    const res = await h.post(operation, Array(101).fill(check));
    expect(res.body.error.errors).toEqual([
      { location: "/body", message: "the body must hold at most 100 items." },
    ]);
  });

  it("names the bad field of the bad check by its index", async () => {
    const res = await h.post(operation, [check, { ...check, limit: 0 }]);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([
      { location: "/body/1/limit", message: "[1].limit must be at least 1." },
    ]);
  });
});
