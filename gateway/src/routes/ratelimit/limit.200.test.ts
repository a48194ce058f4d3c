import type { LimitRequest } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe.each(["ratelimits.limit", "ratelimit.limit"])("POST /v2/%s answering 200", (operation) => {
  let seen: LimitRequest | undefined;
  const h = harness({
    ratelimit: {
      limit(req) {
        seen = req;
        const denied = req.check!.identifier === "user_denied";
        return {
          result: {
            namespace: req.check!.namespace,
            identifier: req.check!.identifier,
            success: !denied,
            limit: denied ? 0n : req.check!.limit,
            remaining: denied ? 0n : 9n,
            reset: 1_767_225_660_000n,
            overrideId: denied ? "rlor_ban" : undefined,
          },
        };
      },
    },
  });

  it("answers success, limit, remaining and reset, and omits overrideId when none applied", async () => {
    const res = await h.post(operation, {
      namespace: "email",
      identifier: "user_1",
      limit: 10,
      duration: 60_000,
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ limit: 10, remaining: 9, reset: 1_767_225_660_000, success: true });
    expect(seen?.check?.cost).toBeUndefined();
    expect(seen?.check?.duration).toBe(60_000n);
    expect(seen?.requestId).toBe(res.body.meta.requestId);
  });

  it("answers a denial as 200 with success false and the override that applied", async () => {
    const res = await h.post(operation, {
      namespace: "email",
      identifier: "user_denied",
      limit: 10,
      duration: 60_000,
      cost: 0,
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      limit: 0,
      remaining: 0,
      reset: 1_767_225_660_000,
      success: false,
      overrideId: "rlor_ban",
    });
    expect(seen?.check?.cost).toBe(0n);
  });

  it("sends concurrent limits in one LimitBatch call, each root key once", async () => {
    const [a, b] = [h.rootKey("ratelimit.*.limit"), h.rootKey("ratelimit.*.limit")];
    const before = h.limitBatches.length;
    const check = (identifier: string) => ({ namespace: "email", identifier, limit: 10, duration: 60_000 });
    const answers = await Promise.all([
      h.post(operation, check("user_1"), { key: a }),
      h.post(operation, check("user_denied"), { key: b }),
      h.post(operation, check("user_3"), { key: a }),
    ]);
    expect(answers.map((r) => [r.status, r.body.data.success])).toEqual([
      [200, true],
      [200, false],
      [200, true],
    ]);
    expect(h.limitBatches.length - before).toBe(1);
    const batch = h.limitBatches.at(-1)!;
    expect(batch.callers).toHaveLength(2);
    const callerOf = new Map(batch.items.map((i) => [i.request?.check?.identifier, i.callerIndex]));
    expect(callerOf.get("user_1")).toBe(callerOf.get("user_3"));
    expect(callerOf.get("user_denied")).not.toBe(callerOf.get("user_1"));
    expect(batch.items.map((i) => i.request?.requestId).sort()).toEqual(
      answers.map((r) => r.body.meta.requestId).sort(),
    );
  });
});
