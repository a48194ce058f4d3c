import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe.each(["ratelimits.getOverride", "ratelimit.getOverride"])(
  "POST /v2/%s answering 200",
  (operation) => {
    it("answers overrideId, identifier, limit and duration", async () => {
      const h = harness({
        ratelimit: {
          getOverride: (req) => ({
            override: {
              overrideId: "rlor_1",
              namespace: req.namespace,
              identifier: req.identifier,
              limit: 50n,
              duration: 60_000n,
            },
          }),
        },
      });
      const res = await h.post(operation, { namespace: "email", identifier: "premium_*" });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        overrideId: "rlor_1",
        identifier: "premium_*",
        limit: 50,
        duration: 60_000,
      });
    });
  },
);
