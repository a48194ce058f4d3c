import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.listKeys answering 403", () => {
  it("answers authorization/insufficient_permissions when decrypt is asked without decrypt_key", async () => {
    const h = harness({
      keys: {
        listKeys(req) {
          expect(req.decrypt).toBe(true);
          throw domainError(
            ErrorReason.INSUFFICIENT_PERMISSIONS,
            "The root key lacks the permission 'api.api_1.decrypt_key'.",
          );
        },
      },
    });
    const res = await h.post(
      "apis.listKeys",
      { apiId: "api_1", decrypt: true },
      { key: h.rootKey("api.api_1.read_key", "api.api_1.read_api") },
    );
    expect(res.status).toBe(403);
    expect(res.body.error.type).toBe(`${DOCS}unkey/authorization/insufficient_permissions`);
    expect(res.body.error.detail).toBe("The root key lacks the permission 'api.api_1.decrypt_key'.");
  });
});
