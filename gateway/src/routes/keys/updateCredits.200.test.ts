import { CreditsOperation, RefillInterval, type UpdateCreditsRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.updateCredits answering 200", () => {
  it("answers the balance after the operation with the refill", async () => {
    const h = harness({
      keys: {
        updateCredits: () => ({
          remaining: 150n,
          refill: { interval: RefillInterval.MONTHLY, amount: 100n, refillDay: 1 },
        }),
      },
    });
    const res = await h.post("keys.updateCredits", { keyId: "key_1", operation: "increment", value: 50 });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      remaining: 150,
      refill: { interval: "monthly", amount: 100, refillDay: 1 },
    });
  });

  it("answers remaining null for an unlimited key, without refill", async () => {
    const h = harness({ keys: { updateCredits: () => ({}) } });
    const res = await h.post("keys.updateCredits", { keyId: "key_1", operation: "set", value: null });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ remaining: null });
  });

  it.each([
    [{ operation: "set", value: 10 }, CreditsOperation.SET, 10n],
    [{ operation: "set", value: null }, CreditsOperation.SET, undefined],
    [{ operation: "set" }, CreditsOperation.SET, undefined],
    [{ operation: "increment", value: 5 }, CreditsOperation.INCREMENT, 5n],
    [{ operation: "decrement", value: 0 }, CreditsOperation.DECREMENT, 0n],
  ] as const)("sends %j as operation %i with value %s", async (fields, operation, value) => {
    const seen: UpdateCreditsRequest[] = [];
    const h = harness({
      keys: {
        updateCredits(req) {
          seen.push(req);
          return { remaining: 1n };
        },
      },
    });
    expect((await h.post("keys.updateCredits", { keyId: "key_1", ...fields })).status).toBe(200);
    expect(seen.map((r) => [r.keyId, r.operation, r.value])).toEqual([["key_1", operation, value]]);
  });
});
