import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.deleteKey answering 400", () => {
  let deleted = 0;
  const h = harness({
    keys: {
      deleteKey() {
        deleted++;
        return {};
      },
    },
  });

  it.each([
    [{}, "/body/keyId", "keyId is required."],
    [{ keyId: null }, "/body/keyId", "keyId must be a string."],
    [{ keyId: "k1" }, "/body/keyId", "keyId must be at least 3 characters long."],
    [{ keyId: "key-1" }, "/body/keyId", "keyId must match the pattern ^[a-zA-Z0-9_]+$."],
    [{ keyId: "key_1", permanent: null }, "/body/permanent", "permanent must be a boolean."],
    [{ keyId: "key_1", permanent: "true" }, "/body/permanent", "permanent must be a boolean."],
    [{ keyId: "key_1", apiId: "api_1" }, "/body/apiId", "apiId is not a field of this operation."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("keys.deleteKey", body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
    expect(deleted).toBe(0);
  });
});
