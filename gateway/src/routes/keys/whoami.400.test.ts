import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.whoami answering 400", () => {
  let asked = 0;
  const h = harness({
    keys: {
      whoami() {
        asked++;
        return {};
      },
    },
  });

  it.each([
    [{}, "/body/key", "key is required."],
    [{ key: null }, "/body/key", "key must be a string."],
    [{ key: "" }, "/body/key", "key must be at least 1 character long."],
    [{ key: "k".repeat(513) }, "/body/key", "key must be at most 512 characters long."],
    [{ key: "sk_1", keyId: "key_1" }, "/body/keyId", "keyId is not a field of this operation."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("keys.whoami", body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
    expect(asked).toBe(0);
  });
});
