import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe.each(["ratelimits.listOverrides", "ratelimit.listOverrides"])(
  "POST /v2/%s answering 400",
  (operation) => {
    const h = harness();

    it.each([
      [{ namespace: "email", limit: 0 }, "/body/limit", "limit must be at least 1."],
      [{ namespace: "email", limit: 101 }, "/body/limit", "limit must be at most 100."],
      [{ namespace: "email", cursor: 5 }, "/body/cursor", "cursor must be a string."],
      [{ limit: 5 }, "/body/namespace", "namespace is required."],
    ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
      const res = await h.post(operation, body);
      expect(res.status).toBe(400);
      expect(res.body.error.errors).toEqual([{ location, message }]);
    });
  },
);
