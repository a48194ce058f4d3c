import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../testing.ts";

describe("POST /v2/keys.rerollKey answering 403", () => {
  it("answers authorization/insufficient_permissions when the service refuses the root key", async () => {
    const h = harness({
      keys: {
        rerollKey() {
          throw domainError(
            ErrorReason.INSUFFICIENT_PERMISSIONS,
            "The root key lacks the permission 'api.api_1.encrypt_key'.",
          );
        },
      },
    });
    const res = await h.post(
      "keys.rerollKey",
      { keyId: "key_1", expiration: 0 },
      { key: h.rootKey("api.api_1.create_key") },
    );
    expect(res.status).toBe(403);
    expect(res.body.error.type).toBe(`${DOCS}unkey/authorization/insufficient_permissions`);
    expect(res.body.error.detail).toBe("The root key lacks the permission 'api.api_1.encrypt_key'.");
  });
});
