import type { SetOverrideRequest } from "@latchkey/proto/ratelimit/v1/ratelimit_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe.each(["ratelimits.setOverride", "ratelimit.setOverride"])(
  "POST /v2/%s answering 200",
  (operation) => {
    it("passes a wildcard identifier and a limit of 0, and answers the overrideId", async () => {
      let seen: SetOverrideRequest | undefined;
      const h = harness({
        ratelimit: {
          setOverride(req) {
            seen = req;
            return { overrideId: "rlor_1" };
          },
        },
      });
      const res = await h.post(operation, {
        namespace: "email",
        identifier: "*@acme.com",
        limit: 0,
        duration: 60_000,
      });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ overrideId: "rlor_1" });
      expect([seen?.namespace, seen?.identifier, seen?.limit, seen?.duration]).toEqual([
        "email",
        "*@acme.com",
        0n,
        60_000n,
      ]);
    });
  },
);
