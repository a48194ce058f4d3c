import type { DeleteForwardAuthPolicyRequest } from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { describe, expect, it } from "vitest";
import { harness, WORKSPACE } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/forwardAuth.deletePolicy and getPolicy answering 200", () => {
  it("deletes through the service and answers data {}", async () => {
    const seen: DeleteForwardAuthPolicyRequest[] = [];
    const h = harness({
      keys: {
        deleteForwardAuthPolicy(req) {
          seen.push(req);
          return {};
        },
      },
    });
    const res = await h.post(
      "forwardAuth.deletePolicy",
      { policyId: "fap_1" },
      { key: h.rootKey("forward_auth.*.delete_policy") },
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({});
    expect(seen.map((r) => [r.policyId, r.caller?.workspaceId])).toEqual([["fap_1", WORKSPACE]]);
  });

  it("answers a policy by its id", async () => {
    const h = harness({
      keys: {
        getForwardAuthPolicy: () => ({
          policy: {
            policyId: "fap_1",
            position: 3,
            isDefault: false,
            definitionJson: '{"name":"a","apiId":"api_1"}',
            createdAt: 1n,
            updatedAt: 2n,
          },
        }),
      },
    });
    const res = await h.post(
      "forwardAuth.getPolicy",
      { policyId: "fap_1" },
      { key: h.rootKey("forward_auth.*.read_policy") },
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      policyId: "fap_1",
      position: 3,
      default: false,
      policy: { name: "a", apiId: "api_1" },
      createdAt: 1,
      updatedAt: 2,
    });
  });
});
