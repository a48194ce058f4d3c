import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";
import { routes } from "../index.ts";

describe("POST /v2/identities.createIdentity answering 409", () => {
  it("answers data/identity_already_exists for a identity that exists already", async () => {
    const h = harness({
      identity: {
        createIdentity() {
          throw domainError(
            ErrorReason.IDENTITY_ALREADY_EXISTS,
            "Identity with externalId 'user_42' already exists in this workspace.",
          );
        },
      },
    });
    const res = await h.post("identities.createIdentity", routes["identities.createIdentity"].example);
    expect(res.status).toBe(409);
    expect(res.body.error).toEqual({
      title: "Conflicting Resource",
      detail: "Identity with externalId 'user_42' already exists in this workspace.",
      status: 409,
      type: `${DOCS}unkey/data/identity_already_exists`,
    });
  });
});
