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

describe("POST /v2/forwardAuth.updatePolicy answering 200 and 400", () => {
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

  it("refuses a body that changes nothing, 400", async () => {
    let updated = 0;
    const h = harness({
      keys: {
        updateForwardAuthPolicy() {
          updated++;
          return stored("{}");
        },
      },
    });
    const nothing = await h.post("forwardAuth.updatePolicy", { policyId: "fap_1" });
    expect(nothing.status).toBe(400);
    expect(nothing.body.error.errors).toEqual([
      expect.objectContaining({ location: "/body", message: "give policy, position or both" }),
    ]);
    expect(updated).toBe(0);
  });
});
