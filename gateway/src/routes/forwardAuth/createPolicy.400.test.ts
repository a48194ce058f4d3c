import { describe, expect, it } from "vitest";
import { DOCS, harness } from "../../../testing/in-memory-gateway.ts";

describe("POST /v2/forwardAuth.createPolicy answering 400", () => {
  let created = 0;
  const h = harness({
    keys: {
      createForwardAuthPolicy() {
        created++;
        return { policyId: "fap_1", position: 0 };
      },
    },
  });

  it.each([
    [{}, "/body/policy", "policy is required."],
    [{ policy: { apiId: "api_1" } }, "/body/policy/name", "policy.name is required."],
    [
      { policy: { name: "a b", apiId: "api_1" } },
      "/body/policy/name",
      "policy.name must match the pattern ^[a-zA-Z0-9_.:-]+$.",
    ],
    [
      { policy: { name: "a", apiId: "api_1", paths: ["no-slash"] } },
      "/body/policy/paths/0",
      "policy.paths[0] must match the pattern ^/[\\x21-\\x7e]*$.",
    ],
    [
      { policy: { name: "a", apiId: "api_1", extra: 1 } },
      "/body/policy/extra",
      "policy.extra is not a field of this operation.",
    ],
    [
      { policy: { name: "a", apiId: "api_1" }, position: -1 },
      "/body/position",
      "position must be at least 0.",
    ],
  ] as [Record<string, unknown>, string, string][])("refuses %j at %s", async (body, location, message) => {
    const res = await h.post("forwardAuth.createPolicy", body);
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe(`${DOCS}unkey/application/invalid_input`);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location, message })]);
    expect(created).toBe(0);
  });
});
