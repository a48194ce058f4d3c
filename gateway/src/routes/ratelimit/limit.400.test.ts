import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

const valid = { namespace: "email", identifier: "user_1", limit: 10, duration: 60_000 };

describe.each(["ratelimits.limit", "ratelimit.limit"])("POST /v2/%s answering 400", (operation) => {
  const h = harness();

  it.each([
    [{ ...valid, namespace: "" }, "/body/namespace", "namespace must be at least 1 character long."],
    [
      { ...valid, identifier: "i".repeat(513) },
      "/body/identifier",
      "identifier must be at most 512 characters long.",
    ],
    [{ ...valid, limit: 0 }, "/body/limit", "limit must be at least 1."],
    [{ ...valid, duration: 999 }, "/body/duration", "duration must be at least 1000."],
    [{ ...valid, duration: 2_592_000_001 }, "/body/duration", "duration must be at most 2592000000."],
    [{ ...valid, cost: -1 }, "/body/cost", "cost must be at least 0."],
    [{ ...valid, async: true }, "/body/async", "async is not a field of this operation."],
    [{ ...valid, meta: {} }, "/body/meta", "meta is not a field of this operation."],
    [{ ...valid, resources: [] }, "/body/resources", "resources is not a field of this operation."],
    [{ identifier: "user_1", limit: 10, duration: 60_000 }, "/body/namespace", "namespace is required."],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post(operation, body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
  });
});
