import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.updateApi answering 404", () => {
  it("answers data/api_not_found for a missing, deleted or foreign API", async () => {
    const h = harness({
      keys: {
        updateApi() {
          throw domainError(ErrorReason.API_NOT_FOUND, "The specified API was not found.");
        },
      },
    });
    const res = await h.post("apis.updateApi", { apiId: "api_gone", name: "billing" });
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "The specified API was not found.",
      status: 404,
      type: `${DOCS}unkey/data/api_not_found`,
    });
  });
});
