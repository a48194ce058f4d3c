import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness, VALID_BODIES } from "../testing.ts";

describe("POST /v2/permissions.getPermission answering 403", () => {
  it("answers authorization/insufficient_permissions when the root key lacks rbac.*.read_permission", async () => {
    const h = harness({
      identity: {
        getPermission() {
          throw domainError(
            ErrorReason.INSUFFICIENT_PERMISSIONS,
            "The root key lacks the permission 'rbac.*.read_permission'.",
          );
        },
      },
    });
    const res = await h.post("permissions.getPermission", VALID_BODIES["permissions.getPermission"], {
      key: h.rootKey("identity.*.read_identity"),
    });
    expect(res.status).toBe(403);
    expect(res.body.error).toEqual({
      title: "Insufficient Permissions",
      detail: "The root key lacks the permission 'rbac.*.read_permission'.",
      status: 403,
      type: `${DOCS}unkey/authorization/insufficient_permissions`,
    });
  });
});
