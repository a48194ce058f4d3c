import { RefillInterval, type UpdateKeyRequest } from "@latchkey/proto/keys/v1/keys_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

/** A gateway whose UpdateKey records what it was asked. */
function updating() {
  const seen: UpdateKeyRequest[] = [];
  const h = harness({
    keys: {
      updateKey(req) {
        seen.push(req);
        return {};
      },
    },
  });
  const update = async (fields: Record<string, unknown>) => {
    const res = await h.post("keys.updateKey", { keyId: "key_1", ...fields });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({});
    return seen.at(-1)!;
  };
  return { h, update };
}

describe("POST /v2/keys.updateKey answering 200", () => {
  it("leaves every omitted field unset and clears nothing", async () => {
    const req = await updating().update({});
    expect(req).toMatchObject({ keyId: "key_1", cleared: [] });
    for (const field of [
      "name",
      "externalId",
      "metaJson",
      "expires",
      "enabled",
      "credits",
      "ratelimits",
      "roles",
      "permissions",
    ] as const) {
      expect(req[field], field).toBeUndefined();
    }
  });

  it("sets every field given a value", async () => {
    const req = await updating().update({
      name: "Acme",
      externalId: "user_42",
      meta: { plan: "pro" },
      expires: 4_102_444_800_000,
      enabled: false,
      credits: { remaining: 100, refill: { interval: "monthly", amount: 100, refillDay: 15 } },
      ratelimits: [
        { name: "requests", limit: 10, duration: 60_000, autoApply: true },
        { name: "heavy", limit: 1, duration: 1000 },
      ],
      roles: ["admin"],
      permissions: ["documents.read", "documents.*"],
    });
    expect(req).toMatchObject({
      name: "Acme",
      externalId: "user_42",
      metaJson: '{"plan":"pro"}',
      expires: 4_102_444_800_000n,
      enabled: false,
      credits: { remaining: 100n, refill: { interval: RefillInterval.MONTHLY, amount: 100n, refillDay: 15 } },
      roles: { values: ["admin"] },
      permissions: { values: ["documents.read", "documents.*"] },
      cleared: [],
    });
    expect(req.ratelimits?.ratelimits.map((r) => [r.name, r.limit, r.duration, r.autoApply])).toEqual([
      ["requests", 10n, 60_000n, true],
      ["heavy", 1n, 1000n, false],
    ]);
  });

  it("names every null field in cleared and leaves it unset", async () => {
    const req = await updating().update({
      name: null,
      externalId: null,
      meta: null,
      expires: null,
      credits: null,
    });
    expect(req.cleared).toEqual(["name", "externalId", "meta", "expires", "credits"]);
    expect([req.name, req.externalId, req.metaJson, req.expires, req.credits]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("clears credits.remaining (unlimited) with credits present and nothing set in it", async () => {
    const req = await updating().update({ credits: { remaining: null } });
    expect(req.cleared).toEqual(["credits.remaining"]);
    expect(req.credits).toBeDefined();
    expect(req.credits?.remaining).toBeUndefined();
    expect(req.credits?.refill).toBeUndefined();
  });

  it("stops the refill and sets the balance when refill is null beside a remaining", async () => {
    const req = await updating().update({ credits: { remaining: 5, refill: null } });
    expect(req.cleared).toEqual(["credits.refill"]);
    expect(req.credits?.remaining).toBe(5n);
    expect(req.credits?.refill).toBeUndefined();
  });

  it("sends a daily refill without a day", async () => {
    const req = await updating().update({ credits: { refill: { interval: "daily", amount: 10 } } });
    expect(req.credits?.remaining).toBeUndefined();
    expect(req.credits?.refill).toMatchObject({ interval: RefillInterval.DAILY, amount: 10n });
    expect(req.credits?.refill?.refillDay).toBeUndefined();
  });

  it("sends empty lists as present and empty, which clears the key's rate limits, roles and permissions", async () => {
    const req = await updating().update({ ratelimits: [], roles: [], permissions: [] });
    expect(req.ratelimits?.ratelimits).toEqual([]);
    expect(req.roles?.values).toEqual([]);
    expect(req.permissions?.values).toEqual([]);
    expect(req.cleared).toEqual([]);
  });
});
