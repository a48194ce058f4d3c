import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";
import { routes } from "../index.ts";

describe("POST /v2/permissions.createRole answering 409", () => {
  it("answers data/role_already_exists for a role that exists already", async () => {
    const h = harness({
      identity: {
        createRole() {
          throw domainError(ErrorReason.ROLE_ALREADY_EXISTS, "A role named 'admin' already exists.");
        },
      },
    });
    const res = await h.post("permissions.createRole", routes["permissions.createRole"].example);
    expect(res.status).toBe(409);
    expect(res.body.error).toEqual({
      title: "Conflicting Resource",
      detail: "A role named 'admin' already exists.",
      status: 409,
      type: `${DOCS}unkey/data/role_already_exists`,
    });
  });
});
