import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.getKey answering 412", () => {
  it("answers application/precondition_failed to decrypt when no encryption key is configured", async () => {
    const h = harness({
      keys: {
        getKey(req) {
          expect(req.decrypt).toBe(true);
          throw domainError(
            ErrorReason.PRECONDITION_FAILED,
            "This API does not support key encryption: no encryption key is configured (LATCHKEY_ENCRYPTION_KEY).",
          );
        },
      },
    });
    const res = await h.post("keys.getKey", { keyId: "key_1", decrypt: true });
    expect(res.status).toBe(412);
    expect(res.body.error).toEqual({
      title: "Precondition Failed",
      detail:
        "This API does not support key encryption: no encryption key is configured (LATCHKEY_ENCRYPTION_KEY).",
      status: 412,
      type: `${DOCS}unkey/application/precondition_failed`,
    });
  });
});
