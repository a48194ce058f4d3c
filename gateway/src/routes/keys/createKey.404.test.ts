import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/keys.createKey answering 404", () => {
  it("answers data/api_not_found for a missing API, and for one the root key may not use (masked by the service)", async () => {
    const h = harness({
      keys: {
        createKey() {
          throw domainError(ErrorReason.API_NOT_FOUND, "The specified API was not found.");
        },
      },
    });
    const res = await h.post(
      "keys.createKey",
      { apiId: "api_other" },
      { key: h.rootKey("api.api_mine.create_key") },
    );
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "The specified API was not found.",
      status: 404,
      type: `${DOCS}unkey/data/api_not_found`,
    });
  });
});
