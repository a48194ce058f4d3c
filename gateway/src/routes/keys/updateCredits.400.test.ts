import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.updateCredits answering 400", () => {
  let called = 0;
  const h = harness({
    keys: {
      updateCredits() {
        called++;
        return {};
      },
    },
  });

  it.each([
    [{ operation: "set" }, "/body/keyId", "keyId is required."],
    [{ keyId: "key_1" }, "/body/operation", "operation is required."],
    [{ keyId: null, operation: "set" }, "/body/keyId", "keyId must be a string."],
    [{ keyId: "key_1", operation: null }, "/body/operation", "operation must be a string."],
    [
      { keyId: "key_1", operation: "add" },
      "/body/operation",
      'operation must be one of "set", "increment", "decrement".',
    ],
    [{ keyId: "key_1", operation: "set", value: -1 }, "/body/value", "value must be at least 0."],
    [{ keyId: "key_1", operation: "set", value: 1.5 }, "/body/value", "value must be an integer or null."],
    [{ keyId: "key_1", operation: "set", value: "5" }, "/body/value", "value must be an integer or null."],
    [
      { keyId: "key_1", operation: "set", value: 2 ** 53 },
      "/body/value",
      "value must be at most 9007199254740991.",
    ],
    [{ keyId: "key_1", operation: "set", cost: 1 }, "/body/cost", "cost is not a field of this operation."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("keys.updateCredits", body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
    expect(called).toBe(0);
  });

  it.each([
    [
      "increment without a value",
      { operation: "increment" },
      "/value",
      "value is required to increment credits",
    ],
    [
      "decrement of an unlimited key",
      { operation: "decrement", value: 1 },
      "/operation",
      "You cannot increment or decrement a key with unlimited credits.",
    ],
  ])("passes on the service's refusal of %s, under /body", async (_, fields, location, message) => {
    const h2 = harness({
      keys: {
        updateCredits() {
          throw domainError(ErrorReason.INVALID_INPUT, message, [{ location, message }]);
        },
      },
    });
    const res = await h2.post("keys.updateCredits", { keyId: "key_1", ...fields });
    expect(res.status).toBe(400);
    expect(res.body.error.detail).toBe(message);
    expect(res.body.error.errors).toEqual([{ location: `/body${location}`, message }]);
  });
});
