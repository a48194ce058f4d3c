import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

const valid = { namespace: "email", identifier: "user_1", limit: 5, duration: 60_000 };

describe.each(["ratelimits.setOverride", "ratelimit.setOverride"])(
  "POST /v2/%s answering 400",
  (operation) => {
    const h = harness();

    it.each([
      [{ ...valid, limit: -1 }, "/body/limit", "limit must be at least 0."],
      [{ ...valid, duration: 999 }, "/body/duration", "duration must be at least 1000."],
      [
        { ...valid, namespaceId: "rlns_1" },
        "/body/namespaceId",
        "namespaceId is not a field of this operation.",
      ],
      [{ namespace: "email", identifier: "user_1", limit: 5 }, "/body/duration", "duration is required."],
    ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
      const res = await h.post(operation, body);
      expect(res.status).toBe(400);
      expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
    });
  },
);
