import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.listKeys answering 400", () => {
  let listed = 0;
  const h = harness({
    keys: {
      listKeys() {
        listed++;
        return { keys: [] };
      },
    },
  });

  it.each([
    [{}, "/body/apiId", "apiId is required."],
    [{ apiId: null }, "/body/apiId", "apiId must be a string."],
    [{ apiId: "ap" }, "/body/apiId", "apiId must be at least 3 characters long."],
    [{ apiId: "api 1" }, "/body/apiId", "apiId must match the pattern ^[a-zA-Z0-9_]+$."],
    [{ apiId: "api_1", limit: 0 }, "/body/limit", "limit must be at least 1."],
    [{ apiId: "api_1", limit: 101 }, "/body/limit", "limit must be at most 100."],
    [{ apiId: "api_1", limit: null }, "/body/limit", "limit must be an integer."],
    [{ apiId: "api_1", cursor: 5 }, "/body/cursor", "cursor must be a string."],
    [{ apiId: "api_1", externalId: "" }, "/body/externalId", "externalId must be at least 1 character long."],
    [{ apiId: "api_1", decrypt: "true" }, "/body/decrypt", "decrypt must be a boolean."],
    [{ apiId: "api_1", search: "a" }, "/body/search", "search is not a field of this operation."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("apis.listKeys", body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
    expect(listed).toBe(0);
  });

  it("passes on the service's refusal of a cursor it did not issue, under /body", async () => {
    const h2 = harness({
      keys: {
        listKeys() {
          throw domainError(ErrorReason.INVALID_INPUT, "cursor is not one this service issued", [
            { location: "/cursor", message: "cursor is not one this service issued" },
          ]);
        },
      },
    });
    const res = await h2.post("apis.listKeys", { apiId: "api_1", cursor: "x".repeat(300) });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([
      { location: "/body/cursor", message: "cursor is not one this service issued" },
    ]);
  });
});
