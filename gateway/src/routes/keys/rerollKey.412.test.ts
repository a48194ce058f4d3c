import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.rerollKey answering 412", () => {
  it("answers application/precondition_failed for a recoverable key when no encryption key is configured", async () => {
    const h = harness({
      keys: {
        rerollKey() {
          throw domainError(
            ErrorReason.PRECONDITION_FAILED,
            "This API does not support key encryption: no encryption key is configured (LATCHKEY_ENCRYPTION_KEY).",
          );
        },
      },
    });
    const res = await h.post("keys.rerollKey", { keyId: "key_1", expiration: 0 });
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
