import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.deleteKey answering 404", () => {
  it("answers data/key_not_found, as for a key deleted already", async () => {
    const h = harness({
      keys: {
        deleteKey() {
          throw domainError(ErrorReason.KEY_NOT_FOUND, "The specified key was not found.");
        },
      },
    });
    const res = await h.post("keys.deleteKey", { keyId: "key_gone", permanent: true });
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "The specified key was not found.",
      status: 404,
      type: `${DOCS}unkey/data/key_not_found`,
    });
  });
});
