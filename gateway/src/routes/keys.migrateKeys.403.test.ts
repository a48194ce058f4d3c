import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../testing.ts";

describe("POST /v2/keys.migrateKeys answering 403", () => {
  it("answers authorization/insufficient_permissions when a new permission slug needs rbac.*.create_permission", async () => {
    const h = harness({
      keys: {
        migrateKeys() {
          throw domainError(
            ErrorReason.INSUFFICIENT_PERMISSIONS,
            "The root key lacks the permission 'rbac.*.create_permission'.",
          );
        },
      },
    });
    const res = await h.post(
      "keys.migrateKeys",
      {
        migrationId: "acme",
        apiId: "api_1",
        keys: [{ hash: "LCa0a2j/xo/5m0U8HTBBNBNCLXBkg7+g+YpeiGJm564=", permissions: ["documents.new"] }],
      },
      { key: h.rootKey("api.api_1.create_key") },
    );
    expect(res.status).toBe(403);
    expect(res.body.error.type).toBe(`${DOCS}unkey/authorization/insufficient_permissions`);
    expect(res.body.error.detail).toBe("The root key lacks the permission 'rbac.*.create_permission'.");
  });
});
