import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";
import { routes } from "../index.ts";

describe("POST /v2/permissions.setRolePermissions answering 404", () => {
  it("answers data/role_not_found for a role that is missing or in another workspace", async () => {
    const h = harness({
      identity: {
        setRolePermissions() {
          throw domainError(ErrorReason.ROLE_NOT_FOUND, "The role 'role_123' was not found.");
        },
      },
    });
    const res = await h.post(
      "permissions.setRolePermissions",
      routes["permissions.setRolePermissions"].example,
    );
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "The role 'role_123' was not found.",
      status: 404,
      type: `${DOCS}unkey/data/role_not_found`,
    });
  });
});
