import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";
import { routes } from "../index.ts";

describe("POST /v2/identities.deleteIdentity answering 404", () => {
  it("answers data/identity_not_found for a identity that is missing or in another workspace", async () => {
    const h = harness({
      identity: {
        deleteIdentity() {
          throw domainError(ErrorReason.IDENTITY_NOT_FOUND, "The identity 'user_42' was not found.");
        },
      },
    });
    const res = await h.post("identities.deleteIdentity", routes["identities.deleteIdentity"].example);
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({
      title: "Not Found",
      detail: "The identity 'user_42' was not found.",
      status: 404,
      type: `${DOCS}unkey/data/identity_not_found`,
    });
  });
});
