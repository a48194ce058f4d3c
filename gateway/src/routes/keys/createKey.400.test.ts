import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.createKey answering 400", () => {
  let created = 0;
  const h = harness({
    keys: {
      createKey() {
        created++;
        return { keyId: "key_1", key: "k" };
      },
    },
  });
  const create = (fields: Record<string, unknown>) =>
    h.post("keys.createKey", { apiId: "api_123", ...fields });

  const cases: [Record<string, unknown>, string, string][] = [
    [{ byteLength: 15 }, "/body/byteLength", "byteLength must be at least 16."],
    [{ byteLength: 256 }, "/body/byteLength", "byteLength must be at most 255."],
    [{ byteLength: 16.5 }, "/body/byteLength", "byteLength must be an integer."],
    [{ prefix: "" }, "/body/prefix", "prefix must be at least 1 character long."],
    [{ prefix: "a".repeat(17) }, "/body/prefix", "prefix must be at most 16 characters long."],
    [{ prefix: "sk-live" }, "/body/prefix", "prefix must match the pattern ^[a-zA-Z0-9_]+$."],
    [{ name: "x".repeat(256) }, "/body/name", "name must be at most 255 characters long."],
    [{ externalId: "user 42" }, "/body/externalId", "externalId must match the pattern ^[a-zA-Z0-9_.-]+$."],
    [{ meta: "plan=pro" }, "/body/meta", "meta must be an object."],
    [{ roles: ["r".repeat(101)] }, "/body/roles/0", "roles[0] must be at most 100 characters long."],
    [{ roles: Array(101).fill("r") }, "/body/roles", "roles must hold at most 100 items."],
    [
      { permissions: ["a b"] },
      "/body/permissions/0",
      "permissions[0] must match the pattern ^[a-zA-Z0-9_:\\-\\.\\*]+$.",
    ],
    [
      { permissions: Array(1001).fill("p") },
      "/body/permissions",
      "permissions must hold at most 1000 items.",
    ],
    [{ expires: -1 }, "/body/expires", "expires must be at least 0."],
    [{ expires: 4102444800001 }, "/body/expires", "expires must be at most 4102444800000."],
    [{ credits: null }, "/body/credits", "credits must be an object."],
    [{ credits: {} }, "/body/credits/remaining", "credits.remaining is required."],
    [{ credits: { remaining: -1 } }, "/body/credits/remaining", "credits.remaining must be at least 0."],
    [
      { credits: { remaining: 1, refill: { interval: "weekly", amount: 1 } } },
      "/body/credits/refill/interval",
      'credits.refill.interval must be one of "daily", "monthly".',
    ],
    [
      { credits: { remaining: 1, refill: { interval: "daily", amount: 0 } } },
      "/body/credits/refill/amount",
      "credits.refill.amount must be at least 1.",
    ],
    [
      { credits: { remaining: 1, refill: { interval: "monthly", amount: 1, refillDay: 32 } } },
      "/body/credits/refill/refillDay",
      "credits.refill.refillDay must be at most 31.",
    ],
    [
      { ratelimits: [{ name: "requests", limit: 10, duration: 999 }] },
      "/body/ratelimits/0/duration",
      "ratelimits[0].duration must be at least 1000.",
    ],
    [
      { ratelimits: [{ name: "rq", limit: 10, duration: 1000 }] },
      "/body/ratelimits/0/name",
      "ratelimits[0].name must be at least 3 characters long.",
    ],
    [
      { ratelimits: Array(51).fill({ name: "requests", limit: 1, duration: 1000 }) },
      "/body/ratelimits",
      "ratelimits must hold at most 50 items.",
    ],
    [{ enabled: "yes" }, "/body/enabled", "enabled must be a boolean."],
  ];

  it.each(cases.map(([fields, location, message]) => ({ fields, location, message })))(
    "answers '$message' at $location",
    async ({ fields, location, message }) => {
      const res = await create(fields);
      expect(res.status).toBe(400);
      expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
      expect(res.body.error.errors).toEqual([{ location, message }]);
      expect(created).toBe(0);
    },
  );

  it("refuses v1's ownerId as an unknown field", async () => {
    const res = await create({ ownerId: "user_1" });
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location: "/body/ownerId" })]);
  });

  it("names every bad field at once", async () => {
    const res = await h.post("keys.createKey", { byteLength: 1, prefix: "" });
    expect(res.body.error.errors.map((e: { location: string }) => e.location).sort()).toEqual([
      "/body/apiId",
      "/body/byteLength",
      "/body/prefix",
    ]);
  });

  it("passes on the service's own field violations under /body", async () => {
    const h2 = harness({
      keys: {
        createKey() {
          throw domainError(ErrorReason.INVALID_INPUT, "refillDay is only for monthly refills", [
            {
              location: "/credits/refill/refillDay",
              message: "refillDay is only for monthly refills",
              fix: "Remove it",
            },
          ]);
        },
      },
    });
    const res = await h2.post("keys.createKey", {
      apiId: "api_123",
      credits: { remaining: 1, refill: { interval: "daily", amount: 1, refillDay: 3 } },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.detail).toBe("refillDay is only for monthly refills");
    expect(res.body.error.errors).toEqual([
      {
        location: "/body/credits/refill/refillDay",
        message: "refillDay is only for monthly refills",
        fix: "Remove it",
      },
    ]);
  });
});
