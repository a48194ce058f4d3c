import { domainError, ErrorReason, invalidInput } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

const range = { start: 1_767_225_600_000, end: 1_767_312_000_000 };

describe("POST /v2/analytics.getVerifications answering 400", () => {
  const h = harness();

  it.each([
    [{ end: range.end }, "/body/start", "start is required."],
    [{ start: range.start }, "/body/end", "end is required."],
    [
      { ...range, granularity: "week" },
      "/body/granularity",
      'granularity must be one of "hour", "day", "month".',
    ],
    [
      { ...range, groupBy: "api" },
      "/body/groupBy",
      'groupBy must be one of "key", "identity", "tag", "outcome".',
    ],
    [{ ...range, tags: Array(11).fill("t") }, "/body/tags", "tags must hold at most 10 items."],
    [{ ...range, tags: ["t".repeat(129)] }, "/body/tags/0", "tags[0] must be at most 128 characters long."],
    [{ ...range, end: 4_102_444_800_001 }, "/body/end", "end must be at most 4102444800000."],
    [{ query: "" }, "/body/query", "query must be at least 1 character long."],
    [{ ...range, outcome: "VALID" }, "/body/outcome", "outcome is not a field of this operation."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("analytics.getVerifications", body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });

  it("names both start and end when neither a query nor a range is given", async () => {
    const res = await h.post("analytics.getVerifications", {});
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([
      { location: "/body/start", message: "start is required." },
      { location: "/body/end", message: "end is required." },
    ]);
  });

  it("names the field the service refuses, such as a range of too many buckets", async () => {
    const refusing = harness({
      analytics: {
        getVerifications() {
          throw invalidInput("/end", "The range spans more than 10000 hour buckets.");
        },
      },
    });
    const res = await refusing.post("analytics.getVerifications", { ...range, granularity: "hour" });
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toEqual([
      { location: "/body/end", message: "The range spans more than 10000 hour buckets." },
    ]);
  });

  it("answers invalid_analytics_query for a raw query the service will not run", async () => {
    const refusing = harness({
      analytics: {
        getVerifications() {
          throw domainError(
            ErrorReason.INVALID_ANALYTICS_QUERY,
            "Only the tables key_verifications_* may be read.",
          );
        },
      },
    });
    const res = await refusing.post("analytics.getVerifications", { query: "SELECT * FROM system.tables" });
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({
      title: "Bad Request",
      detail: "Only the tables key_verifications_* may be read.",
      status: 400,
      type: `${DOCS}user/bad_request/invalid_analytics_query`,
      errors: [],
    });
  });
});
