import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";
import { routes } from "../index.ts";

describe("POST /v2/permissions.deletePermission answering 404", () => {
  it("answers data/permission_not_found for a permission that is missing or in another workspace", async () => {
    const h = harness({
      identity: {
        deletePermission() {
          throw domainError(
            ErrorReason.PERMISSION_NOT_FOUND,
            "The permission 'documents.read' was not found.",
          );
        },
      },
    });
    const res = await h.post("permissions.deletePermission", routes["permissions.deletePermission"].example);
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "The permission 'documents.read' was not found.",
      status: 404,
      type: `${DOCS}unkey/data/permission_not_found`,
    });
  });
});
