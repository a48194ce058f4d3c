import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness, VALID_BODIES } from "../testing.ts";

describe("POST /v2/permissions.deletePermission answering 403", () => {
  it("answers authorization/insufficient_permissions when the root key lacks rbac.*.delete_permission", async () => {
    const h = harness({
      identity: {
        deletePermission() {
          throw domainError(
            ErrorReason.INSUFFICIENT_PERMISSIONS,
            "The root key lacks the permission 'rbac.*.delete_permission'.",
          );
        },
      },
    });
    const res = await h.post("permissions.deletePermission", VALID_BODIES["permissions.deletePermission"], {
      key: h.rootKey("identity.*.read_identity"),
    });
    expect(res.status).toBe(403);
    expect(res.body.error).toEqual({
      title: "Insufficient Permissions",
      detail: "The root key lacks the permission 'rbac.*.delete_permission'.",
      status: 403,
      type: `${DOCS}unkey/authorization/insufficient_permissions`,
    });
  });
});
