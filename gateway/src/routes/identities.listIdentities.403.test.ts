import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness, VALID_BODIES } from "../testing.ts";

describe("POST /v2/identities.listIdentities answering 403", () => {
  it("answers authorization/insufficient_permissions when the root key lacks identity.*.read_identity", async () => {
    const h = harness({
      identity: {
        listIdentities() {
          throw domainError(
            ErrorReason.INSUFFICIENT_PERMISSIONS,
            "The root key lacks the permission 'identity.*.read_identity'.",
          );
        },
      },
    });
    const res = await h.post("identities.listIdentities", VALID_BODIES["identities.listIdentities"], {
      key: h.rootKey("rbac.*.read_role"),
    });
    expect(res.status).toBe(403);
    expect(res.body.error).toEqual({
      title: "Insufficient Permissions",
      detail: "The root key lacks the permission 'identity.*.read_identity'.",
      status: 403,
      type: `${DOCS}unkey/authorization/insufficient_permissions`,
    });
  });
});
