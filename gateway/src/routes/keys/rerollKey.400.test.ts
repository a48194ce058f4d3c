import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.rerollKey answering 400", () => {
  let rerolled = 0;
  const h = harness({
    keys: {
      rerollKey() {
        rerolled++;
        return { keyId: "key_new", key: "k" };
      },
    },
  });

  it.each([
    [{ expiration: 0 }, "/body/keyId", "keyId is required."],
    [{ keyId: "key_1" }, "/body/expiration", "expiration is required."],
    [{ keyId: "key_1", expiration: null }, "/body/expiration", "expiration must be an integer."],
    [{ keyId: "key_1", expiration: -1 }, "/body/expiration", "expiration must be at least 0."],
    [
      { keyId: "key_1", expiration: 4_102_444_800_001 },
      "/body/expiration",
      "expiration must be at most 4102444800000.",
    ],
    [{ keyId: "key_1", expiration: 1.5 }, "/body/expiration", "expiration must be an integer."],
    [{ keyId: null, expiration: 0 }, "/body/keyId", "keyId must be a string."],
    [
      { keyId: "key_1", expiration: 0, prefix: "sk" },
      "/body/prefix",
      "prefix is not a field of this operation.",
    ],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("keys.rerollKey", body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
    expect(rerolled).toBe(0);
  });
});
