import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../testing.ts";

describe("POST /v2/keys.removeRoles answering 403", () => {
  it("answers authorization/insufficient_permissions naming the permission the service found missing", async () => {
    const h = harness({
      keys: {
        removeRoles() {
          throw domainError(
            ErrorReason.INSUFFICIENT_PERMISSIONS,
            "The root key lacks the permission 'api.api_1.update_key'.",
          );
        },
      },
    });
    const res = await h.post(
      "keys.removeRoles",
      { keyId: "key_1", roles: ["admin"] },
      { key: h.rootKey("api.*.read_key") },
    );
    expect(res.status).toBe(403);
    expect(res.body.error.type).toBe(`${DOCS}unkey/authorization/insufficient_permissions`);
    expect(res.body.error.detail).toBe("The root key lacks the permission 'api.api_1.update_key'.");
  });
});
