import type { UpdateForwardAuthPolicyRequest } from "@latchkey/proto/keys/v1/forward_auth_policies_pb";
import { describe, expect, it } from "vitest";
import { harness } from "../../../testing/in-memory-gateway.ts";

const stored = (json: string, isDefault = false) => ({
  policy: {
    policyId: "fap_1",
    position: isDefault ? -1 : 0,
    isDefault,
    definitionJson: json,
    createdAt: 1n,
    updatedAt: 5n,
  },
});

describe("POST /v2/forwardAuth.updatePolicy answering 200", () => {
  it("replaces the definition and moves the policy, answering it as it now is", async () => {
    const seen: UpdateForwardAuthPolicyRequest[] = [];
    const h = harness({
      keys: {
        updateForwardAuthPolicy(req) {
          seen.push(req);
          return stored(req.definitionJson!);
        },
      },
    });
    const policy = { name: "a", apiId: "api_1", permissions: "orders.write" };
    const res = await h.post(
      "forwardAuth.updatePolicy",
      { policyId: "fap_1", policy, position: 0 },
      {
        key: h.rootKey("forward_auth.*.update_policy"),
      },
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      policyId: "fap_1",
      position: 0,
      default: false,
      policy,
      createdAt: 1,
      updatedAt: 5,
    });
    expect(seen.map((r) => [JSON.parse(r.definitionJson!), r.position])).toEqual([[policy, 0]]);
  });

  it("hands a body that changes nothing to the service, which answers the policy as it is", async () => {
    const seen: UpdateForwardAuthPolicyRequest[] = [];
    const h = harness({
      keys: {
        updateForwardAuthPolicy(req) {
          seen.push(req);
          return stored('{"name":"a","apiId":"api_1"}');
        },
      },
    });
    const res = await h.post("forwardAuth.updatePolicy", { policyId: "fap_1" });
    expect(res.status).toBe(200);
    expect(res.body.data.policy).toEqual({ name: "a", apiId: "api_1" });
    expect(seen.map((r) => [r.definitionJson, r.position])).toEqual([[undefined, undefined]]);
  });
});
