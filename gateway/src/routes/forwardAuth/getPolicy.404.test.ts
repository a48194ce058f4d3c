import { ErrorReason } from "@latchkey/proto/common/v1/common_pb";
import { domainError } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

const missing = () =>
  domainError(ErrorReason.FORWARD_AUTH_POLICY_NOT_FOUND, "The specified forward-auth policy was not found.");

describe("forwardAuth.getPolicy, updatePolicy and deletePolicy answering 404", () => {
  const h = harness({
    keys: {
      getForwardAuthPolicy() {
        throw missing();
      },
      updateForwardAuthPolicy() {
        throw missing();
      },
      deleteForwardAuthPolicy() {
        throw missing();
      },
    },
  });

  it.each([
    ["forwardAuth.getPolicy", { policyId: "fap_gone" }],
    ["forwardAuth.updatePolicy", { policyId: "fap_gone", position: 0 }],
    ["forwardAuth.deletePolicy", { policyId: "fap_gone" }],
  ] as const)("%s answers a missing policy (or another workspace's) 404", async (operation, body) => {
    const res = await h.post(operation, body);
    expect(res.status).toBe(404);
    expect(res.body.error.type).toBe(`${DOCS}unkey/data/forward_auth_policy_not_found`);
    expect(res.body.error.detail).toBe("The specified forward-auth policy was not found.");
  });

  it("answers updatePolicy with a new definition 404 when the policy is gone", async () => {
    const res = await h.post("forwardAuth.updatePolicy", {
      policyId: "fap_gone",
      policy: { name: "a", apiId: "api_1" },
    });
    expect(res.status).toBe(404);
  });
});
