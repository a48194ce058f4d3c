import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.listKeys answering 412", () => {
  it("answers application/precondition_failed when decrypt meets a service without an encryption key", async () => {
    const h = harness({
      keys: {
        listKeys() {
          throw domainError(
            ErrorReason.PRECONDITION_FAILED,
            "This API does not support key encryption: no encryption key is configured (LATCHKEY_ENCRYPTION_KEY).",
          );
        },
      },
    });
    const res = await h.post("apis.listKeys", { apiId: "api_1", decrypt: true });
    expect(res.status).toBe(412);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/precondition_failed`);
    expect(res.body.error.detail).toBe(
      "This API does not support key encryption: no encryption key is configured (LATCHKEY_ENCRYPTION_KEY).",
    );
  });
});
