import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness, VALID_BODIES } from "../testing.ts";

describe("POST /v2/permissions.setRolePermissions answering 403", () => {
  it("answers authorization/insufficient_permissions when the root key lacks rbac.*.add_permission_to_role", async () => {
    const h = harness({
      identity: {
        setRolePermissions() {
          throw domainError(
            ErrorReason.INSUFFICIENT_PERMISSIONS,
            "The root key lacks the permission 'rbac.*.add_permission_to_role'.",
          );
        },
      },
    });
    const res = await h.post(
      "permissions.setRolePermissions",
      VALID_BODIES["permissions.setRolePermissions"],
      { key: h.rootKey("identity.*.read_identity") },
    );
    expect(res.status).toBe(403);
    expect(res.body.error).toEqual({
      title: "Insufficient Permissions",
      detail: "The root key lacks the permission 'rbac.*.add_permission_to_role'.",
      status: 403,
      type: `${DOCS}unkey/authorization/insufficient_permissions`,
    });
  });
});
