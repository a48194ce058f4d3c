import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.listKeys answering 404", () => {
  it("answers data/api_not_found for a missing API, and for one whose keys the root key may not read (masked by the service)", async () => {
    const h = harness({
      keys: {
        listKeys() {
          throw domainError(ErrorReason.API_NOT_FOUND, "The specified API was not found.");
        },
      },
    });
    const res = await h.post(
      "apis.listKeys",
      { apiId: "api_other" },
      { key: h.rootKey("api.api_mine.read_key") },
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
