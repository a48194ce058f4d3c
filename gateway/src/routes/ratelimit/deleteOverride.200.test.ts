import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

describe.each(["ratelimits.deleteOverride", "ratelimit.deleteOverride"])(
  "POST /v2/%s answering 200",
  (operation) => {
    it("deletes the override and answers an empty data object", async () => {
      const deleted: string[] = [];
      const h = harness({
        ratelimit: {
          deleteOverride(req) {
            deleted.push(`${req.namespace}/${req.identifier}`);
            return {};
          },
        },
      });
      const res = await h.post(operation, { namespace: "email", identifier: "user_1" });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ meta: { requestId: expect.stringMatching(/^req_/) }, data: {} });
      expect(deleted).toEqual(["email/user_1"]);
    });
  },
);
