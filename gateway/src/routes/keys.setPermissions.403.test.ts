import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../testing.ts";

describe("POST /v2/keys.setPermissions answering 403", () => {
  it("answers authorization/insufficient_permissions naming the permission the service found missing", async () => {
    const h = harness({
      keys: {
        setPermissions() {
          throw domainError(
            ErrorReason.INSUFFICIENT_PERMISSIONS,
            "The root key lacks the permission 'rbac.*.create_permission'.",
          );
        },
      },
    });
    const res = await h.post(
      "keys.setPermissions",
      { keyId: "key_1", permissions: ["documents.read"] },
      { key: h.rootKey("api.*.update_key") },
    );
    expect(res.status).toBe(403);
    expect(res.body.error.type).toBe(`${DOCS}unkey/authorization/insufficient_permissions`);
    expect(res.body.error.detail).toBe("The root key lacks the permission 'rbac.*.create_permission'.");
  });
});
