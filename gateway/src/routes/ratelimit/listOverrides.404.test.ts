import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe.each(["ratelimits.listOverrides", "ratelimit.listOverrides"])(
  "POST /v2/%s answering 404",
  (operation) => {
    it("answers data/ratelimit_namespace_not_found for a namespace never used", async () => {
      const h = harness({
        ratelimit: {
          listOverrides() {
            throw domainError(ErrorReason.NAMESPACE_NOT_FOUND, "Namespace 'email' does not exist.");
          },
        },
      });
      const res = await h.post(operation, { namespace: "email" });
      expect(res.status).toBe(404);
      expect(res.body.error.type).toBe(`${DOCS}unkey/data/ratelimit_namespace_not_found`);
    });
  },
);
