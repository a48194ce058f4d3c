import type { MultiLimitRequest } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe.each(["ratelimits.multiLimit", "ratelimit.multiLimit"])("POST /v2/%s answering 200", (operation) => {
  it("takes a bare array and answers passed with each limit's result, in order", async () => {
    let seen: MultiLimitRequest | undefined;
    const h = harness({
      ratelimit: {
        multiLimit(req) {
          seen = req;
          return {
            passed: false,
            results: req.checks.map((c, i) => ({
              namespace: c.namespace,
              identifier: c.identifier,
              success: i === 0,
              limit: c.limit,
              remaining: i === 0 ? 4n : 0n,
              reset: 1_000_000n + BigInt(i),
              overrideId: i === 1 ? "rlor_1" : undefined,
            })),
          };
        },
      },
    });
    const res = await h.post(operation, [
      { namespace: "email", identifier: "user_1", limit: 5, duration: 60_000 },
      { namespace: "sms", identifier: "user_1", limit: 1, duration: 1_000, cost: 2 },
    ]);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      passed: false,
      limits: [
        { namespace: "email", identifier: "user_1", limit: 5, remaining: 4, reset: 1_000_000, passed: true },
        {
          namespace: "sms",
          identifier: "user_1",
          limit: 1,
          remaining: 0,
          reset: 1_000_001,
          passed: false,
          overrideId: "rlor_1",
        },
      ],
    });
    expect(seen?.checks.map((c) => c.cost)).toEqual([undefined, 2n]);
  });
});
