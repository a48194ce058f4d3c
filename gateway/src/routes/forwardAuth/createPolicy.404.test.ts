import { domainError, ErrorReason } from "@latchkey/runtime";
import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

// The keys service refuses a policy whose apiId is not an API of the caller's workspace
// (services/keys/src/rpc/forward-auth-policies.ts): missing, deleted and another workspace's alike.
// Faked here as it answers; test/in-memory/forward-auth-policies.test.ts runs the real one.

const NOT_FOUND = {
  title: "Not Found",
  detail: "The specified API was not found.",
  status: 404,
  type: `${DOCS}unkey/data/api_not_found`,
};

describe("forwardAuth.createPolicy and updatePolicy answering 404 for an API not the workspace's", () => {
  const asked: string[] = [];
  const ownApi = (definitionJson: string) => {
    const { apiId } = JSON.parse(definitionJson) as { apiId: string };
    asked.push(apiId);
    if (apiId !== "api_mine")
      throw domainError(ErrorReason.API_NOT_FOUND, "The specified API was not found.");
  };
  const h = harness({
    keys: {
      createForwardAuthPolicy(req) {
        ownApi(req.definitionJson);
        return { policyId: "fap_1", position: 0 };
      },
      updateForwardAuthPolicy(req) {
        ownApi(req.definitionJson ?? "{}");
        throw new Error("unreachable in these tests");
      },
    },
  });

  it.each([
    ["forwardAuth.createPolicy", "api_missing"],
    ["forwardAuth.createPolicy", "api_of_another_workspace"],
    ["forwardAuth.updatePolicy", "api_missing"],
    ["forwardAuth.updatePolicy", "api_of_another_workspace"],
  ] as const)("%s answers apiId %s data/api_not_found, word for word", async (operation, apiId) => {
    const policy = { name: "orders", paths: ["/orders/**"], apiId };
    const body = operation === "forwardAuth.createPolicy" ? { policy } : { policyId: "fap_1", policy };
    const before = asked.length;
    const res = await h.post(operation, body);
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual(NOT_FOUND);
    expect(asked.slice(before)).toEqual([apiId]);
  });

  it("answers a default policy naming an unknown API the same", async () => {
    const res = await h.post("forwardAuth.createPolicy", {
      policy: { name: "rest", apiId: "api_missing" },
      default: true,
    });
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual(NOT_FOUND);
  });
});
