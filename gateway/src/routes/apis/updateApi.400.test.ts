import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.updateApi answering 400", () => {
  const h = harness();

  it.each([
    [{}, "/body/apiId", "apiId is required."],
    [{ apiId: "api_1", name: "ab" }, "/body/name", "name must be at least 3 characters long."],
    [
      { apiId: "api_1", keyFormat: "base64" },
      "/body/keyFormat",
      'keyFormat must be one of "plain", "checksum".',
    ],
    [
      { apiId: "api_1", leakPolicy: "ignore" },
      "/body/leakPolicy",
      'leakPolicy must be one of "revoke", "flag".',
    ],
    [
      { apiId: "api_1", expiringNoticeDays: 366 },
      "/body/expiringNoticeDays",
      "expiringNoticeDays must be at most 365.",
    ],
    [
      { apiId: "api_1", ipAllowList: Array(101).fill("10.0.0.1") },
      "/body/ipAllowList",
      "ipAllowList must hold at most 100 items.",
    ],
    [
      { apiId: "api_1", creditThresholds: [50, 101] },
      "/body/creditThresholds/1",
      "creditThresholds[1] must be at most 100.",
    ],
    [
      { apiId: "api_1", creditThresholds: [-1] },
      "/body/creditThresholds/0",
      "creditThresholds[0] must be at least 0.",
    ],
    [
      { apiId: "api_1", creditThresholds: [1.5] },
      "/body/creditThresholds/0",
      "creditThresholds[0] must be an integer.",
    ],
    [
      { apiId: "api_1", creditThresholds: Array.from({ length: 11 }, (_, i) => i) },
      "/body/creditThresholds",
      "creditThresholds must hold at most 10 items.",
    ],
    [{ apiId: "api_1", owner: "x" }, "/body/owner", "owner is not a field of this operation."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("apis.updateApi", body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toContainEqual(expect.objectContaining({ location, message }));
  });
});
