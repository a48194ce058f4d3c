import type { CreateForwardAuthPolicyRequest } from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { describe, expect, it } from "vitest";
import { harness, WORKSPACE } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/forwardAuth.createPolicy answering 200", () => {
  it("hands the service the checked definition as JSON, with its position, and answers its id", async () => {
    const seen: CreateForwardAuthPolicyRequest[] = [];
    const h = harness({
      keys: {
        createForwardAuthPolicy(req) {
          seen.push(req);
          return { policyId: "fap_1", position: 2 };
        },
      },
    });
    const policy = {
      name: "orders",
      paths: ["/v1/orders/**"],
      apiId: "api_1",
      key: { from: "header", name: "x-api-key" },
    };
    const res = await h.post(
      "forwardAuth.createPolicy",
      { policy, position: 2 },
      { key: h.rootKey("forward_auth.*.create_policy") },
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ policyId: "fap_1", position: 2 });
    expect(
      seen.map((r) => [JSON.parse(r.definitionJson), r.position, r.isDefault, r.caller?.workspaceId]),
    ).toEqual([[policy, 2, false, WORKSPACE]]);
  });

  it("creates the default without a position", async () => {
    const seen: CreateForwardAuthPolicyRequest[] = [];
    const h = harness({
      keys: {
        createForwardAuthPolicy(req) {
          seen.push(req);
          return { policyId: "fap_d", position: -1 };
        },
      },
    });
    const res = await h.post("forwardAuth.createPolicy", {
      policy: { name: "rest", apiId: "api_1" },
      default: true,
      position: 3,
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ policyId: "fap_d" });
    expect(seen.map((r) => [r.isDefault, r.position])).toEqual([[true, undefined]]);
  });
});
