import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.updateKey answering 400", () => {
  let updated = 0;
  const h = harness({
    keys: {
      updateKey() {
        updated++;
        return {};
      },
    },
  });

  const cases: [Record<string, unknown>, string, string][] = [
    [{ keyId: undefined }, "/body/keyId", "keyId is required."],
    [{ keyId: null }, "/body/keyId", "keyId must be a string."],
    [{ name: "" }, "/body/name", "name must be at least 1 character long."],
    [{ name: 5 }, "/body/name", "name must be a string or null."],
    [{ externalId: "user 42" }, "/body/externalId", "externalId must match the pattern ^[a-zA-Z0-9_.-]+$."],
    [{ meta: "plan=pro" }, "/body/meta", "meta must be an object or null."],
    [{ expires: -1 }, "/body/expires", "expires must be at least 0."],
    [{ expires: 4102444800001 }, "/body/expires", "expires must be at most 4102444800000."],
    [{ credits: 5 }, "/body/credits", "credits must be an object or null."],
    [{ credits: { remaining: -1 } }, "/body/credits/remaining", "credits.remaining must be at least 0."],
    [{ credits: { cost: 1 } }, "/body/credits/cost", "credits.cost is not a field of this operation."],
    [
      { credits: { refill: { interval: "weekly", amount: 1 } } },
      "/body/credits/refill/interval",
      'credits.refill.interval must be one of "daily", "monthly".',
    ],
    [
      { credits: { refill: { interval: "daily" } } },
      "/body/credits/refill/amount",
      "credits.refill.amount is required.",
    ],
    [
      { credits: { refill: { interval: "monthly", amount: 1, refillDay: 0 } } },
      "/body/credits/refill/refillDay",
      "credits.refill.refillDay must be at least 1.",
    ],
    [{ enabled: null }, "/body/enabled", "enabled must be a boolean."],
    [{ ratelimits: null }, "/body/ratelimits", "ratelimits must be an array."],
    [
      { ratelimits: [{ name: "requests", limit: 10, duration: 999 }] },
      "/body/ratelimits/0/duration",
      "ratelimits[0].duration must be at least 1000.",
    ],
    [
      { ratelimits: Array(51).fill({ name: "requests", limit: 1, duration: 1000 }) },
      "/body/ratelimits",
      "ratelimits must hold at most 50 items.",
    ],
    [{ roles: null }, "/body/roles", "roles must be an array."],
    [{ roles: ["r".repeat(101)] }, "/body/roles/0", "roles[0] must be at most 100 characters long."],
    [{ permissions: null }, "/body/permissions", "permissions must be an array."],
    [
      { permissions: ["a b"] },
      "/body/permissions/0",
      "permissions[0] must match the pattern ^[a-zA-Z0-9_:\\-\\.\\*]+$.",
    ],
    [{ ownerId: "user_1" }, "/body/ownerId", "ownerId is not a field of this operation."],
  ];

  it.each(cases.map(([fields, location, message]) => ({ fields, location, message })))(
    "answers '$message' at $location",
    async ({ fields, location, message }) => {
      const res = await h.post("keys.updateKey", { keyId: "key_1", ...fields });
      expect(res.status).toBe(400);
      expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
      expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
      expect(updated).toBe(0);
    },
  );

  it("passes on the service's refusal of a refill on a key made unlimited, under /body", async () => {
    const h2 = harness({
      keys: {
        updateKey(req) {
          expect(req.cleared).toEqual(["credits.remaining"]);
          throw domainError(ErrorReason.INVALID_INPUT, "a refill needs a balance", [
            {
              location: "/credits/refill",
              message: "a refill needs a balance",
              fix: "Give credits.remaining or omit refill.",
            },
          ]);
        },
      },
    });
    const res = await h2.post("keys.updateKey", {
      keyId: "key_1",
      credits: { remaining: null, refill: { interval: "daily", amount: 5 } },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([
      {
        location: "/body/credits/refill",
        message: "a refill needs a balance",
        fix: "Give credits.remaining or omit refill.",
      },
    ]);
  });
});
