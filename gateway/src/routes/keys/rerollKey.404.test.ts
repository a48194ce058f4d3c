import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.rerollKey answering 404", () => {
  it("answers data/key_not_found", async () => {
    const h = harness({
      keys: {
        rerollKey() {
          throw domainError(ErrorReason.KEY_NOT_FOUND, "The specified key was not found.");
        },
      },
    });
    const res = await h.post("keys.rerollKey", { keyId: "key_gone", expiration: 0 });
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "The specified key was not found.",
      status: 404,
      type: `${DOCS}unkey/data/key_not_found`,
    });
  });
});
