import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe.each(["ratelimits.setOverride", "ratelimit.setOverride"])(
  "POST /v2/%s answering 404",
  (operation) => {
    it("answers data/ratelimit_namespace_not_found for an unknown namespace", async () => {
      const h = harness({
        ratelimit: {
          setOverride() {
            throw domainError(ErrorReason.NAMESPACE_NOT_FOUND, "The namespace 'nope' does not exist.");
          },
        },
      });
      const res = await h.post(operation, {
        namespace: "nope",
        identifier: "user_1",
        limit: 5,
        duration: 60_000,
      });
      expect(res.status).toBe(404);
      expect(res.body.error).toEqual({
        title: "Not Found",
        detail: "The namespace 'nope' does not exist.",
        status: 404,
        type: `${DOCS}unkey/data/ratelimit_namespace_not_found`,
      });
    });
  },
);
