import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe.each(["ratelimits.deleteOverride", "ratelimit.deleteOverride"])(
  "POST /v2/%s answering 404",
  (operation) => {
    it("answers data/ratelimit_override_not_found", async () => {
      const h = harness({
        ratelimit: {
          deleteOverride() {
            throw domainError(ErrorReason.OVERRIDE_NOT_FOUND, "No override for 'user_1' in 'email'.");
          },
        },
      });
      const res = await h.post(operation, { namespace: "email", identifier: "user_1" });
      expect(res.status).toBe(404);
      expect(res.body.error.type).toBe(`${DOCS}unkey/data/ratelimit_override_not_found`);
    });
  },
);
