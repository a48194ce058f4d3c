import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../testing.ts";

describe.each(["ratelimits.listOverrides", "ratelimit.listOverrides"])(
  "POST /v2/%s answering 403",
  (operation) => {
    it("answers insufficient_permissions when the root key may not read overrides", async () => {
      const h = harness({
        ratelimit: {
          listOverrides() {
            throw domainError(
              ErrorReason.INSUFFICIENT_PERMISSIONS,
              "The root key lacks the permission 'ratelimit.*.read_override'.",
            );
          },
        },
      });
      const res = await h.post(operation, { namespace: "email" }, { key: h.rootKey("ratelimit.*.limit") });
      expect(res.status).toBe(403);
      expect(res.body.error.type).toBe(`${DOCS}unkey/authorization/insufficient_permissions`);
    });
  },
);
