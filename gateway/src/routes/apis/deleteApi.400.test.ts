import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.deleteApi answering 400", () => {
  let deleted = 0;
  const h = harness({
    keys: {
      deleteApi() {
        deleted++;
        return {};
      },
    },
  });

  it.each([
    [{}, "/body/apiId", "apiId is required."],
    [{ apiId: null }, "/body/apiId", "apiId must be a string."],
    [{ apiId: "ap" }, "/body/apiId", "apiId must be at least 3 characters long."],
    [{ apiId: "a".repeat(256) }, "/body/apiId", "apiId must be at most 255 characters long."],
    [{ apiId: "api-1" }, "/body/apiId", "apiId must match the pattern ^[a-zA-Z0-9_]+$."],
    [{ apiId: "api_1", force: true }, "/body/force", "force is not a field of this operation."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("apis.deleteApi", body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
    expect(deleted).toBe(0);
  });
});
