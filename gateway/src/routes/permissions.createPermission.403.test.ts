import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness, VALID_BODIES } from "../testing.ts";

describe("POST /v2/permissions.createPermission answering 403", () => {
  it("answers authorization/insufficient_permissions when the root key lacks rbac.*.create_permission", async () => {
    const h = harness({
      identity: {
        createPermission() {
          throw domainError(
            ErrorReason.INSUFFICIENT_PERMISSIONS,
            "The root key lacks the permission 'rbac.*.create_permission'.",
          );
        },
      },
    });
    const res = await h.post("permissions.createPermission", VALID_BODIES["permissions.createPermission"], {
      key: h.rootKey("identity.*.read_identity"),
    });
    expect(res.status).toBe(403);
    expect(res.body.error).toEqual({
      title: "Insufficient Permissions",
      detail: "The root key lacks the permission 'rbac.*.create_permission'.",
      status: 403,
      type: `${DOCS}unkey/authorization/insufficient_permissions`,
    });
  });
});
