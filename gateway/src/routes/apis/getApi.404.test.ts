import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/apis.getApi answering 404", () => {
  it("answers data/api_not_found with the service's detail", async () => {
    const h = harness({
      keys: {
        getApi() {
          throw domainError(
            ErrorReason.API_NOT_FOUND,
            "The requested API does not exist or has been deleted.",
          );
        },
      },
    });
    const res = await h.post("apis.getApi", { apiId: "api_gone" });
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "The requested API does not exist or has been deleted.",
      status: 404,
      type: `${DOCS}unkey/data/api_not_found`,
    });
  });
});
