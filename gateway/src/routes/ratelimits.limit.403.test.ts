import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../testing.ts";

describe.each(["ratelimits.limit", "ratelimit.limit"])("POST /v2/%s answering 403", (operation) => {
  it("answers insufficient_permissions when the namespace is new and the root key cannot create it", async () => {
    const h = harness({
      ratelimit: {
        limit() {
          throw domainError(
            ErrorReason.INSUFFICIENT_PERMISSIONS,
            "The root key lacks the permission 'ratelimit.*.create_namespace'.",
          );
        },
      },
    });
    const res = await h.post(
      operation,
      { namespace: "new", identifier: "user_1", limit: 10, duration: 60_000 },
      { key: h.rootKey("ratelimit.*.limit") },
    );
    expect(res.status).toBe(403);
    expect(res.body.error.type).toBe(`${DOCS}unkey/authorization/insufficient_permissions`);
    expect(res.body.error.detail).toBe("The root key lacks the permission 'ratelimit.*.create_namespace'.");
  });
});
