import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";
import { routes } from "../index.ts";

describe("POST /v2/permissions.createPermission answering 409", () => {
  it("answers data/permission_already_exists for a permission that exists already", async () => {
    const h = harness({
      identity: {
        createPermission() {
          throw domainError(
            ErrorReason.PERMISSION_ALREADY_EXISTS,
            "A permission with slug 'documents.read' already exists.",
          );
        },
      },
    });
    const res = await h.post("permissions.createPermission", routes["permissions.createPermission"].example);
    expect(res.status).toBe(409);
    expect(res.body.error).toEqual({
      title: "Conflicting Resource",
      detail: "A permission with slug 'documents.read' already exists.",
      status: 409,
      type: `${DOCS}unkey/data/permission_already_exists`,
    });
  });
});
