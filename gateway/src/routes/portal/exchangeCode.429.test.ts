import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("portal.exchangeCode and each client's budget of attempts", () => {
  it("answers 429 past the burst and lets one attempt through per 6 s after", async () => {
    let called = 0;
    const h = harness({
      exchangeBudget: { burst: 3, perMinute: 10 },
      portal: {
        exchangeCode: () => {
          called++;
          return { accessToken: "pat_1", expiresAt: BigInt(Date.now() + 60_000) };
        },
      },
    });
    const post = () => h.post("portal.exchangeCode", { code: "pst_1" }, { authorization: null });
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await post()).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const refused = await post();
    expect([refused.body.error.status, refused.body.error.detail]).toEqual([
      429,
      "Too many portal.exchangeCode attempts from this client; retry in 6 s.",
    ]);
    expect(called).toBe(3);
    h.clock.advance(6_000);
    expect((await post()).status).toBe(200);
    expect((await post()).status).toBe(429);
  });
});
