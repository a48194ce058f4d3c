import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.updateKey answering 404", () => {
  it("answers data/key_not_found", async () => {
    const h = harness({
      keys: {
        updateKey() {
          throw domainError(ErrorReason.KEY_NOT_FOUND, "The specified key was not found.");
        },
      },
    });
    const res = await h.post("keys.updateKey", { keyId: "key_gone", name: "Acme" });
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "The specified key was not found.",
      status: 404,
      type: `${DOCS}unkey/data/key_not_found`,
    });
  });

  it("answers data/role_not_found naming a role that does not exist", async () => {
    const h = harness({
      keys: {
        updateKey() {
          throw domainError(ErrorReason.ROLE_NOT_FOUND, "Role 'auditor' was not found.");
        },
      },
    });
    const res = await h.post("keys.updateKey", { keyId: "key_1", roles: ["admin", "auditor"] });
    expect(res.status).toBe(404);
    expect(res.body.error.type).toBe(`${DOCS}unkey/data/role_not_found`);
    expect(res.body.error.detail).toBe("Role 'auditor' was not found.");
  });
});
