import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe.each(["ratelimits.getOverride", "ratelimit.getOverride"])(
  "POST /v2/%s answering 400",
  (operation) => {
    it("names a missing identifier", async () => {
      const res = await harness().post(operation, { namespace: "email" });
      expect(res.status).toBe(400);
      expect(res.body.error.errors).toEqual([
        { location: "/body/identifier", message: "identifier is required." },
      ]);
    });
  },
);
