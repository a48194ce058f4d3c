import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.whoami answering 404", () => {
  it("answers data/key_not_found for an unknown key, and for one the root key may not read (masked by the service)", async () => {
    const h = harness({
      keys: {
        whoami() {
          throw domainError(ErrorReason.KEY_NOT_FOUND, "The specified key was not found.");
        },
      },
    });
    const res = await h.post(
      "keys.whoami",
      { key: "sk_4f9K2mQ" },
      { key: h.rootKey("api.api_other.read_key") },
    );
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "The specified key was not found.",
      status: 404,
      type: `${DOCS}unkey/data/key_not_found`,
    });
  });
});
