import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

const body = (fields: Record<string, unknown> = {}) => ({
  migrationId: "acme",
  apiId: "api_other",
  keys: [{ hash: "LCa0a2j/xo/5m0U8HTBBNBNCLXBkg7+g+YpeiGJm564=", ...fields }],
});

describe("POST /v2/keys.migrateKeys answering 404", () => {
  it("answers data/api_not_found for a missing API, and for one the root key may not create keys in (masked by the service)", async () => {
    const h = harness({
      keys: {
        migrateKeys() {
          throw domainError(ErrorReason.API_NOT_FOUND, "The specified API was not found.");
        },
      },
    });
    const res = await h.post("keys.migrateKeys", body(), { key: h.rootKey("api.api_mine.create_key") });
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "The specified API was not found.",
      status: 404,
      type: `${DOCS}unkey/data/api_not_found`,
    });
  });

  it("answers data/role_not_found naming a role that does not exist", async () => {
    const h = harness({
      keys: {
        migrateKeys() {
          throw domainError(ErrorReason.ROLE_NOT_FOUND, "Role 'auditor' was not found.");
        },
      },
    });
    const res = await h.post("keys.migrateKeys", body({ roles: ["auditor"] }));
    expect(res.status).toBe(404);
    expect(res.body.error.type).toBe(`${DOCS}unkey/data/role_not_found`);
    expect(res.body.error.detail).toBe("Role 'auditor' was not found.");
  });
});
