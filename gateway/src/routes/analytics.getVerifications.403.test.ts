import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness, VALID_BODIES } from "../testing.ts";

describe("POST /v2/analytics.getVerifications answering 403", () => {
  it("answers insufficient_permissions when the root key may not read the API's analytics", async () => {
    const h = harness({
      analytics: {
        getVerifications() {
          throw domainError(
            ErrorReason.INSUFFICIENT_PERMISSIONS,
            "The root key lacks the permission 'api.api_1.read_analytics'.",
          );
        },
      },
    });
    const res = await h.post(
      "analytics.getVerifications",
      { ...VALID_BODIES["analytics.getVerifications"], apiId: "api_1" },
      { key: h.rootKey("api.api_2.read_analytics") },
    );
    expect(res.status).toBe(403);
    expect(res.body.error.type).toBe(`${DOCS}unkey/authorization/insufficient_permissions`);
  });
});
