import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

const HASH = "LCa0a2j/xo/5m0U8HTBBNBNCLXBkg7+g+YpeiGJm564=";

describe("POST /v2/keys.migrateKeys answering 400", () => {
  let called = 0;
  const h = harness({
    keys: {
      migrateKeys() {
        called++;
        return { migrated: [], failed: [] };
      },
    },
  });
  const migrate = (fields: Record<string, unknown>) =>
    h.post("keys.migrateKeys", { migrationId: "acme", apiId: "api_1", keys: [{ hash: HASH }], ...fields });
  const key = (fields: Record<string, unknown>) => ({ keys: [{ hash: HASH, ...fields }] });

  it.each([
    [{ migrationId: undefined }, "/body/migrationId", "migrationId is required."],
    [{ migrationId: "ab" }, "/body/migrationId", "migrationId must be at least 3 characters long."],
    [{ apiId: null }, "/body/apiId", "apiId must be a string."],
    [{ apiId: "api 1" }, "/body/apiId", "apiId must match the pattern ^[a-zA-Z0-9_]+$."],
    [{ keys: undefined }, "/body/keys", "keys is required."],
    [{ keys: [] }, "/body/keys", "keys must hold at least 1 item."],
    [{ keys: Array(1001).fill({ hash: HASH }) }, "/body/keys", "keys must hold at most 1000 items."],
    [{ keys: [{}] }, "/body/keys/0/hash", "keys[0].hash is required."],
    [key({ hash: "ab" }), "/body/keys/0/hash", "keys[0].hash must be at least 3 characters long."],
    [key({ start: "" }), "/body/keys/0/start", "keys[0].start must be at least 1 character long."],
    [
      key({ externalId: "user 42" }),
      "/body/keys/0/externalId",
      "keys[0].externalId must match the pattern ^[a-zA-Z0-9_.-]+$.",
    ],
    [key({ meta: null }), "/body/keys/0/meta", "keys[0].meta must be an object."],
    [key({ expires: -1 }), "/body/keys/0/expires", "keys[0].expires must be at least 0."],
    [key({ credits: null }), "/body/keys/0/credits", "keys[0].credits must be an object."],
    [key({ credits: {} }), "/body/keys/0/credits/remaining", "keys[0].credits.remaining is required."],
    [
      key({ credits: { remaining: 1, refill: { interval: "weekly", amount: 1 } } }),
      "/body/keys/0/credits/refill/interval",
      'keys[0].credits.refill.interval must be one of "daily", "monthly".',
    ],
    [key({ roles: null }), "/body/keys/0/roles", "keys[0].roles must be an array."],
    [
      key({ permissions: ["a b"] }),
      "/body/keys/0/permissions/0",
      "keys[0].permissions[0] must match the pattern ^[a-zA-Z0-9_:\\-\\.\\*]+$.",
    ],
    [
      key({ ratelimits: [{ name: "requests", limit: 0, duration: 1000 }] }),
      "/body/keys/0/ratelimits/0/limit",
      "keys[0].ratelimits[0].limit must be at least 1.",
    ],
    [
      key({ recoverable: true }),
      "/body/keys/0/recoverable",
      "keys[0].recoverable is not a field of this operation.",
    ],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (fields, location, message) => {
    const res = await migrate(fields);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
    expect(called).toBe(0);
  });

  it("passes on the service's refusal of a hash that is not a SHA-256, under /body", async () => {
    const message = "hash must be the SHA-256 of the key, as 64 hex characters or 44 base64 characters";
    const h2 = harness({
      keys: {
        migrateKeys() {
          throw domainError(ErrorReason.INVALID_INPUT, message, [{ location: "/keys/1/hash", message }]);
        },
      },
    });
    const res = await h2.post("keys.migrateKeys", {
      migrationId: "acme",
      apiId: "api_1",
      keys: [{ hash: HASH }, { hash: "not-a-hash" }],
    });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([{ location: "/body/keys/1/hash", message }]);
  });
});
